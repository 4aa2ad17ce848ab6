// Consistency checks and tile geometry for the interpreter. Validation (graph/validate.cpp)
// reports the same problems with file locations; this file only makes sure evaluation never
// reads or writes out of bounds, so a graph that skipped validation fails cleanly.
#include "verify/evaluation_plan.h"

#include "graph/error.h"
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

std::string kernelOpWhere(const graph::KernelGraph& graph, size_t index) {
  const graph::KernelOp& op = graph.ops[index];
  std::string where =
      "kernel op " + std::to_string(index) + " (" + std::string(graph::opName(op.kind));
  if (!op.name.empty()) where += " '" + op.name + "'";
  return where + ")";
}

// Tensor ids of a block graph's ops must be in range before graph::blockTensorPhases reads them.
void checkBlockTensorIds(const graph::BlockGraph& block, const std::string& where) {
  const int count = static_cast<int>(block.tensors.size());
  std::vector<bool> defined(count, false);
  for (size_t b = 0; b < block.ops.size(); ++b) {
    const graph::BlockOp& op = block.ops[b];
    const std::string opWhere =
        where + " block op " + std::to_string(b) + " (" + std::string(graph::opName(op.kind)) + ")";
    for (TensorId t : op.inputs) {
      if (t < 0 || t >= count || !defined[t]) {
        throw UserError(opWhere, "reads a tile that is not defined before it");
      }
    }
    if (op.kind == OpKind::Output) continue;
    if (op.output < 0 || op.output >= count || defined[op.output]) {
      throw UserError(opWhere, "does not define a new tile of this block graph");
    }
    defined[op.output] = true;
  }
}

TilePlacement planInput(const graph::KernelGraph& graph, const graph::KernelOp& kernel,
                        const graph::BlockOp& op, const Dims& declaredTile,
                        const std::string& where) {
  const graph::BlockGraph& block = *kernel.block;
  if (op.kernelTensor < 0 || op.kernelTensor >= static_cast<int>(kernel.inputs.size())) {
    throw UserError(where, "reads kernel input " + std::to_string(op.kernelTensor) +
                               ", which this kernel does not have");
  }
  const graph::TensorDesc& source = graph.tensors[kernel.inputs[op.kernelTensor]];
  TilePlacement placement;
  placement.deviceTensor = kernel.inputs[op.kernelTensor];
  try {
    placement.tileShape = graph::inputTileShape(source.shape, source.name, block, op);
  } catch (const graph::ShapeError& e) {
    throw UserError(where, e.what());
  }
  if (placement.tileShape != declaredTile) {
    throw UserError(where, "tile of '" + source.name + "' is " +
                               graph::formatDims(placement.tileShape) + " but is declared " +
                               graph::formatDims(declaredTile));
  }
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    const int dim = op.imap[axis];
    if (block.grid[axis] == 1 || dim == graph::kReplicated) continue;
    placement.gridDim[axis] = dim;
    placement.gridStep[axis] = source.shape[dim] / block.grid[axis];
  }
  if (block.forloop > 1 && op.fmap != graph::kReplicated) {
    placement.loopDim = op.fmap;
    placement.loopStep = placement.tileShape[op.fmap];
  }
  return placement;
}

TilePlacement planOutput(const graph::KernelGraph& graph, const graph::KernelOp& kernel,
                         const graph::BlockOp& op, const Dims& tile, const std::string& where) {
  const graph::BlockGraph& block = *kernel.block;
  const graph::TensorDesc& dest = graph.tensors[kernel.outputs[op.kernelTensor]];
  Dims written;
  try {
    written = graph::outputDeviceShape(tile, dest.name, block, op);
  } catch (const graph::ShapeError& e) {
    throw UserError(where, e.what());
  }
  if (written != dest.shape) {
    throw UserError(where, "blocks write " + graph::formatDims(written) + " but kernel output '" +
                               dest.name + "' is " + graph::formatDims(dest.shape));
  }
  TilePlacement placement;
  placement.deviceTensor = kernel.outputs[op.kernelTensor];
  placement.tileShape = tile;
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (block.grid[axis] == 1) continue;
    placement.gridDim[axis] = op.omap[axis];
    placement.gridStep[axis] = tile[op.omap[axis]];
  }
  return placement;
}

BlockPlan planBlockGraph(const graph::KernelGraph& graph, const graph::KernelOp& kernel,
                         const std::string& where) {
  const graph::BlockGraph& block = *kernel.block;
  BlockPlan plan;
  plan.grid = block.grid;
  plan.forloop = block.forloop;
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (block.grid[axis] < 1) {
      throw UserError(where, std::string("grid.") + graph::gridAxisName(axis) + " is " +
                                 std::to_string(block.grid[axis]) + " (must be >= 1)");
    }
  }
  if (block.forloop < 1) {
    throw UserError(where, "forloop is " + std::to_string(block.forloop) + " (must be >= 1)");
  }
  checkBlockTensorIds(block, where);
  plan.tileCount = static_cast<int>(block.tensors.size());
  for (const graph::BlockTensor& tile : block.tensors) plan.tileShapes.push_back(tile.shape);
  const std::vector<graph::Phase> phases = graph::blockTensorPhases(block);
  std::vector<bool> written(kernel.outputs.size(), false);
  for (size_t b = 0; b < block.ops.size(); ++b) {
    const graph::BlockOp& op = block.ops[b];
    const std::string opWhere =
        where + " block op " + std::to_string(b) + " (" + std::string(graph::opName(op.kind)) + ")";
    if (!graph::opInfo(op.kind).blockLevel) throw UserError(opWhere, "is not a block-graph op");
    BlockStep step{op.kind, op.inputs, op.output, op.attrs, -1};
    if (op.kind == OpKind::Input) {
      step.placement = static_cast<int>(plan.placements.size());
      plan.placements.push_back(planInput(graph, kernel, op, plan.tileShapes[op.output], opWhere));
      plan.perIteration.push_back(std::move(step));
      continue;
    }
    if (op.kind == OpKind::Output) {
      if (op.inputs.size() != 1) throw UserError(opWhere, "must write exactly one tile");
      if (op.kernelTensor < 0 || op.kernelTensor >= static_cast<int>(kernel.outputs.size()) ||
          written[op.kernelTensor]) {
        throw UserError(opWhere, "must write a distinct output of its kernel");
      }
      written[op.kernelTensor] = true;
      if (block.forloop > 1 && phases[op.inputs[0]] != graph::Phase::PostLoop) {
        throw UserError(opWhere, "writes a per-iteration tile while forloop > 1");
      }
      step.placement = static_cast<int>(plan.placements.size());
      plan.placements.push_back(
          planOutput(graph, kernel, op, plan.tileShapes[op.inputs[0]], opWhere));
      plan.outputs.push_back(std::move(step));
      continue;
    }
    std::vector<const Dims*> shapes;
    std::vector<std::string> names;
    for (TensorId t : op.inputs) {
      shapes.push_back(&plan.tileShapes[t]);
      names.push_back(block.tensors[t].name);
    }
    const Dims result = inferShape(op.kind, op.attrs, shapes, names, opWhere);
    if (result != plan.tileShapes[op.output]) {
      throw UserError(opWhere, "computes " + graph::formatDims(result) + " but tile '" +
                                   block.tensors[op.output].name + "' is declared " +
                                   graph::formatDims(plan.tileShapes[op.output]));
    }
    const graph::Phase phase = phases[op.inputs[0]];
    for (TensorId t : op.inputs) {
      if (phases[t] != phase) throw UserError(opWhere, "mixes per-iteration and accumulated tiles");
    }
    if (graph::isAccumulator(op.kind)) {
      if (phase != graph::Phase::PerIteration) {
        throw UserError(opWhere, "accumulates a tile that is already accumulated");
      }
      plan.perIteration.push_back(std::move(step));
    } else if (phase == graph::Phase::PerIteration) {
      plan.perIteration.push_back(std::move(step));
    } else {
      plan.postLoop.push_back(std::move(step));
    }
  }
  for (size_t o = 0; o < written.size(); ++o) {
    if (!written[o]) {
      throw UserError(where, "kernel output '" + graph.tensors[kernel.outputs[o]].name +
                                 "' is never written by the block graph");
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

KernelPlan planKernelGraph(const graph::KernelGraph& graph) {
  const int count = static_cast<int>(graph.tensors.size());
  for (const graph::TensorDesc& t : graph.tensors) checkShape(t.shape, "tensor '" + t.name + "'");
  std::vector<bool> defined(count, false);
  for (TensorId t : graph.inputs) {
    if (t < 0 || t >= count || defined[t]) {
      throw UserError("inputs", "input " + std::to_string(t) + " is not a distinct tensor");
    }
    defined[t] = true;
  }
  KernelPlan plan;
  for (size_t k = 0; k < graph.ops.size(); ++k) {
    const graph::KernelOp& op = graph.ops[k];
    const std::string where = kernelOpWhere(graph, k);
    if (!graph::opInfo(op.kind).kernelLevel || op.kind == OpKind::Input ||
        op.kind == OpKind::Output) {
      throw UserError(where, "is not a kernel-graph op");
    }
    for (TensorId t : op.inputs) {
      if (t < 0 || t >= count || !defined[t]) {
        throw UserError(where, "reads a tensor that is not defined before it");
      }
    }
    if (op.outputs.empty()) throw UserError(where, "produces no tensor");
    for (TensorId t : op.outputs) {
      if (t < 0 || t >= count || defined[t]) {
        throw UserError(where, "does not define a new tensor of this graph");
      }
    }
    KernelStep step{&op, {}};
    if (op.kind == OpKind::BlockGraph) {
      if (!op.block) throw UserError(where, "has no block graph");
      step.block = planBlockGraph(graph, op, where);
    } else {
      if (op.outputs.size() != 1) throw UserError(where, "must produce exactly one tensor");
      std::vector<const Dims*> shapes;
      std::vector<std::string> names;
      for (TensorId t : op.inputs) {
        shapes.push_back(&graph.tensors[t].shape);
        names.push_back(graph.tensors[t].name);
      }
      const Dims result = inferShape(op.kind, op.attrs, shapes, names, where);
      const graph::TensorDesc& out = graph.tensors[op.outputs[0]];
      if (result != out.shape) {
        throw UserError(where, "computes " + graph::formatDims(result) + " but '" + out.name +
                                   "' is declared " + graph::formatDims(out.shape));
      }
    }
    for (TensorId t : op.outputs) defined[t] = true;
    plan.steps.push_back(std::move(step));
  }
  for (TensorId t : graph.outputs) {
    if (t < 0 || t >= count || !defined[t]) {
      throw UserError("outputs", "output " + std::to_string(t) + " is not a defined tensor");
    }
  }
  return plan;
}

}  // namespace mugraph::verify
