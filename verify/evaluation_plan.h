// What the interpreter needs to know about a kernel graph before it computes anything: graph
// validation's verdict (so a graph that fails validation is a UserError, never a crash) and
// the tile geometry of each block graph, all independent of the number type.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "graph/tile_splits.h"
#include "verify/interpreter.h"

namespace mugraph::verify {

// A shape padded to rank 4 with leading 1s, with row-major strides; loops over it need no
// rank-dependent code.
struct Shape4 {
  std::array<int64_t, graph::kMaxRank> extent{1, 1, 1, 1};
  std::array<int64_t, graph::kMaxRank> stride{0, 0, 0, 0};
};
Shape4 paddedShape(const graph::Dims& shape);

// Rank 1..4, positive dims and as many values as the shape has elements; else UserError.
void checkTensorData(const graph::Dims& shape, size_t dataSize, const std::string& what);

// Result shape of a compute op on operands of these shapes (UserError when they do not fit).
graph::Dims computeResultShape(graph::OpKind kind, const graph::OpAttrs& attrs,
                               const std::vector<const graph::Dims*>& operandShapes);

using BlockIndex = std::array<int64_t, graph::kGridAxes>;

// Where a block's tile sits in a device tensor: along gridDim[a] it moves gridStep[a] per block
// index b_a, along loopDim it moves loopStep per iteration; `split` says how many of its
// elements are real there (partial tiles, graph/tile_splits.h).
struct TilePlacement {
  graph::TensorId deviceTensor = -1;  // kernel-graph tensor read (input) or written (output)
  graph::Dims tileShape;
  graph::TileSplit split;
  std::array<int, graph::kGridAxes> gridDim{graph::kReplicated, graph::kReplicated,
                                            graph::kReplicated};
  std::array<int64_t, graph::kGridAxes> gridStep{0, 0, 0};
  int loopDim = graph::kReplicated;
  int64_t loopStep = 0;

  // Row-major offset of the tile's first element in the device tensor, padded to rank 4.
  std::array<int64_t, graph::kMaxRank> offset(const BlockIndex& block, int64_t iteration) const;
  // The tile's real elements in that block and iteration: the tile shape, cut short where a
  // partial part or iteration ends.
  graph::Dims realShape(const BlockIndex& block, int64_t iteration) const;
};

// One block-graph op as the interpreter runs it.
struct BlockStep {
  graph::OpKind kind = graph::OpKind::Input;
  std::vector<graph::TensorId> inputs;  // block tensors
  graph::TensorId output = -1;          // block tensor (-1 for Output)
  graph::OpAttrs attrs;
  int placement = -1;  // Input/Output: index into BlockPlan::placements
};

struct BlockPlan {
  BlockIndex grid{1, 1, 1};
  int64_t forloop = 1;
  // A loop whose last block part has fewer real iterations: blocks run iterationsIn(part)
  // of them (graph/tile_splits.h); every block runs all `forloop` without it.
  std::optional<graph::DimSplit> shortenedLoop;
  int64_t iterationsOf(const BlockIndex& block) const;
  // Tile `tile`'s real elements in block `block` before the loop's first iteration (an
  // accumulator's shape where the block runs no iteration).
  graph::Dims realShapeOf(graph::TensorId tile, const BlockIndex& block) const;
  int tileCount = 0;
  std::vector<graph::Dims> tileShapes;
  std::vector<graph::TileSplit> splits;  // per tile: how its dims walk the device dims
  // Where `tile`'s last two dims sit in block `block` at `iteration` (for causal_mask).
  MaskFrame maskFrame(graph::TensorId tile, const BlockIndex& block, int64_t iteration) const;
  std::vector<TilePlacement> placements;
  std::vector<BlockStep> perIteration;  // inputs, per-iteration ops, accumulator updates
  std::vector<BlockStep> postLoop;      // ops after the accumulators, once per block
  // Of perIteration, the ops on running maxima alone (graph::Phase::Running) and the
  // invariant inputs and ops (graph::Phase::Invariant): a block that runs no iteration reads
  // and computes them once, the running ones from the accumulators' identities.
  std::vector<BlockStep> running;
  std::vector<BlockStep> outputs;       // tile writes after the loop
};

struct KernelStep {
  const graph::KernelOp* op = nullptr;
  BlockPlan block;  // meaningful iff op->kind == BlockGraph
};

struct KernelPlan {
  std::vector<KernelStep> steps;
};

// Validates `graph` (graph/validate.h; a violation is a UserError at the JSON path of the
// offending field) and lays out its evaluation.
KernelPlan planKernelGraph(const graph::KernelGraph& graph);

}  // namespace mugraph::verify
