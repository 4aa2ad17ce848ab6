// Tile geometry for the interpreter. Whether a graph is consistent is decided once, by
// graph validation (graph/validate.cpp); this file asks it first, so a graph that skipped
// validation fails with validation's own message instead of reading out of bounds.
#include "verify/evaluation_plan.h"

#include "graph/error.h"
#include "graph/json_reader.h"
#include "graph/shape_inference.h"
#include "graph/validate.h"

namespace mugraph::verify {
namespace {

using graph::Dims;
using graph::OpKind;
using graph::TensorId;

void checkShape(const Dims& shape, const std::string& what) {
  const int rank = static_cast<int>(shape.size());
  if (rank < 1 || rank > graph::kMaxRank) {
    throw UserError(what, "has rank " + std::to_string(rank) + " (1 to 4 supported)");
  }
  for (int64_t extent : shape) {
    if (extent <= 0) throw UserError(what, "has shape " + graph::formatDims(shape));
  }
}

// graph::inferOp on operands named `names`, its ShapeError turned into a UserError at `where`.
Dims inferShape(OpKind kind, const graph::OpAttrs& attrs, const std::vector<const Dims*>& shapes,
                const std::vector<std::string>& names, const std::string& where) {
  const graph::OpInfo& info = graph::opInfo(kind);
  if (static_cast<int>(shapes.size()) != info.arity || shapes.size() > names.size()) {
    throw UserError(where, std::string(info.name) + " takes " + std::to_string(info.arity) +
                               " operand(s), got " + std::to_string(shapes.size()));
  }
  std::vector<graph::Operand> operands;
  for (size_t i = 0; i < shapes.size(); ++i) {
    operands.push_back(graph::Operand{names[i], graph::DType::F32, *shapes[i]});
  }
  try {
    return graph::inferOp(kind, attrs, operands).shape;
  } catch (const graph::ShapeError& e) {
    throw UserError(where, e.what());
  }
}

// Graph validation's verdict as a UserError; `where` is the JSON path of the offending field
// (the same path a schedule file loaded from disk would report).
void requireValidGraph(const graph::KernelGraph& graph) {
  try {
    if (graph.isProgram()) {
      graph::validateProgram(graph);
    } else {
      graph::validateKernelGraph(graph);
    }
  } catch (const graph::IrError& e) {
    throw UserError(graph::jsonPathOf("$", e.location().section, e.location()), e.what());
  }
}

// A block's step along a grid-split dim is its part of the dim, which the for-loop may split
// further into tiles; the last part or iteration may be partial (graph/tile_splits.h).
TilePlacement planInput(const graph::KernelOp& kernel, const graph::BlockOp& op, const Dims& tile,
                        const graph::TileSplit& split) {
  const graph::BlockGraph& block = *kernel.block;
  TilePlacement placement;
  placement.deviceTensor = kernel.inputs[op.kernelTensor];
  placement.tileShape = tile;
  placement.split = split;
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    const int dim = op.imap[axis];
    if (block.grid[axis] == 1 || dim == graph::kReplicated) continue;
    placement.gridDim[axis] = dim;
    placement.gridStep[axis] = split[dim].blockTile;
  }
  if (block.forloop > 1 && op.fmap != graph::kReplicated) {
    placement.loopDim = op.fmap;
    placement.loopStep = tile[op.fmap];
  }
  return placement;
}

TilePlacement planOutput(const graph::KernelOp& kernel, const graph::BlockOp& op, const Dims& tile,
                         const graph::TileSplit& split) {
  const graph::BlockGraph& block = *kernel.block;
  TilePlacement placement;
  placement.deviceTensor = kernel.outputs[op.kernelTensor];
  placement.tileShape = tile;
  placement.split = split;
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (block.grid[axis] == 1) continue;
    const int dim = op.omap[axis];
    placement.gridDim[axis] = dim;
    placement.gridStep[axis] = split[dim].gridAxis == axis ? split[dim].blockTile : tile[dim];
  }
  return placement;
}

// Inputs and per-iteration ops (accumulator updates included) run every iteration; ops on
// accumulated tiles once per block after the loop; outputs last.
BlockPlan planBlockGraph(const graph::KernelGraph& graph, const graph::KernelOp& kernel) {
  const graph::BlockGraph& block = *kernel.block;
  BlockPlan plan;
  plan.grid = block.grid;
  plan.forloop = block.forloop;
  plan.tileCount = static_cast<int>(block.tensors.size());
  for (const graph::BlockTensor& tile : block.tensors) plan.tileShapes.push_back(tile.shape);
  const std::vector<graph::Phase> phases = graph::blockTensorPhases(block);
  std::vector<Dims> inputShapes;
  for (TensorId t : kernel.inputs) inputShapes.push_back(graph.tensors[t].shape);
  plan.splits = graph::blockTileSplits(block, inputShapes);
  const std::vector<graph::TileSplit>& splits = plan.splits;
  plan.shortenedLoop = graph::shortenedLoop(splits);
  for (const graph::BlockOp& op : block.ops) {
    BlockStep step{op.kind, op.inputs, op.output, op.attrs, -1};
    if (op.kind == OpKind::Input) {
      step.placement = static_cast<int>(plan.placements.size());
      plan.placements.push_back(
          planInput(kernel, op, plan.tileShapes[op.output], splits[op.output]));
      if (phases[op.output] == graph::Phase::Invariant) plan.running.push_back(step);
      plan.perIteration.push_back(std::move(step));
    } else if (op.kind == OpKind::Output) {
      step.placement = static_cast<int>(plan.placements.size());
      plan.placements.push_back(
          planOutput(kernel, op, plan.tileShapes[op.inputs[0]], splits[op.inputs[0]]));
      plan.outputs.push_back(std::move(step));
    } else if (phases[op.output] != graph::Phase::PostLoop || graph::isAccumulator(op.kind)) {
      if ((phases[op.output] == graph::Phase::Running ||
           phases[op.output] == graph::Phase::Invariant) &&
          !graph::isAccumulator(op.kind)) {
        plan.running.push_back(step);
      }
      plan.perIteration.push_back(std::move(step));
    } else {
      plan.postLoop.push_back(std::move(step));
    }
  }
  return plan;
}

}  // namespace

Shape4 paddedShape(const Dims& shape) {
  Shape4 padded;
  const int pad = graph::kMaxRank - static_cast<int>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) padded.extent[pad + d] = shape[d];
  int64_t stride = 1;
  for (int d = graph::kMaxRank - 1; d >= 0; --d) {
    padded.stride[d] = stride;
    stride *= padded.extent[d];
  }
  return padded;
}

void checkTensorData(const Dims& shape, size_t dataSize, const std::string& what) {
  checkShape(shape, what);
  if (static_cast<int64_t>(dataSize) != graph::elementCount(shape)) {
    throw UserError(
        what, "has " + std::to_string(dataSize) + " values but shape " + graph::formatDims(shape));
  }
}

Dims computeResultShape(OpKind kind, const graph::OpAttrs& attrs,
                        const std::vector<const Dims*>& operandShapes) {
  return inferShape(kind, attrs, operandShapes, {"operand 0", "operand 1"},
                    std::string(graph::opName(kind)));
}

std::array<int64_t, graph::kMaxRank> TilePlacement::offset(const BlockIndex& block,
                                                           int64_t iteration) const {
  std::array<int64_t, graph::kMaxRank> result{0, 0, 0, 0};
  const int pad = graph::kMaxRank - static_cast<int>(tileShape.size());
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (gridDim[axis] != graph::kReplicated)
      result[pad + gridDim[axis]] += block[axis] * gridStep[axis];
  }
  if (loopDim != graph::kReplicated) result[pad + loopDim] += iteration * loopStep;
  return result;
}

MaskFrame BlockPlan::maskFrame(graph::TensorId tile, const BlockIndex& block,
                               int64_t iteration) const {
  const graph::TileSplit& split = splits.at(tile);
  const size_t rank = split.size();
  const auto startOf = [&](const graph::DimSplit& cut) {
    return cut.start(cut.gridAxis == graph::kReplicated ? 0 : block[cut.gridAxis], iteration);
  };
  return MaskFrame{startOf(split[rank - 2]), startOf(split[rank - 1]), split[rank - 2].extent,
                   split[rank - 1].extent};
}

int64_t BlockPlan::iterationsOf(const BlockIndex& block) const {
  if (!shortenedLoop) return forloop;
  const int axis = shortenedLoop->gridAxis;
  return shortenedLoop->iterationsIn(axis == graph::kReplicated ? 0 : block[axis]);
}

Dims BlockPlan::realShapeOf(graph::TensorId tile, const BlockIndex& block) const {
  Dims shape = tileShapes.at(tile);
  const graph::TileSplit& split = splits.at(tile);
  for (size_t d = 0; d < shape.size() && d < split.size(); ++d) {
    const graph::DimSplit& cut = split[d];
    shape[d] = cut.realExtent(cut.gridAxis == graph::kReplicated ? 0 : block[cut.gridAxis], 0);
  }
  return shape;
}

Dims TilePlacement::realShape(const BlockIndex& block, int64_t iteration) const {
  Dims shape = tileShape;
  for (size_t d = 0; d < shape.size(); ++d) {
    const graph::DimSplit& cut = split[d];
    const int64_t part = cut.gridAxis == graph::kReplicated ? 0 : block[cut.gridAxis];
    shape[d] = cut.realExtent(part, iteration);
  }
  return shape;
}

KernelPlan planKernelGraph(const graph::KernelGraph& graph) {
  requireValidGraph(graph);
  KernelPlan plan;
  for (const graph::KernelOp& op : graph.ops) {
    KernelStep step{&op, {}};
    if (op.kind == OpKind::BlockGraph) step.block = planBlockGraph(graph, op);
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

}  // namespace mugraph::verify
