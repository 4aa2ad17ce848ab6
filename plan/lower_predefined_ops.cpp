// Default block graphs for predefined ops (see lower_predefined_ops.h). Tiles are chosen
// from divisors only (every split is exact, as the IR requires) and kept small enough for
// shared memory on every target.
#include "plan/lower_predefined_ops.h"

#include <algorithm>

#include "graph/builder.h"
#include "graph/cuda_limits.h"
#include "graph/error.h"
#include "graph/shape_inference.h"
#include "graph/validate.h"

namespace mugraph::plan {
namespace {

using graph::AxisMap;
using graph::Dims;
using graph::OpKind;
using graph::TensorId;

inline constexpr int64_t kElementwiseTile = 4096;  // elements per block, at most
// At least, where a small output would otherwise leave most multiprocessors idle and make one
// block walk it element after element (a decode's [32, 128] division: 8 blocks, not 1).
inline constexpr int64_t kSmallElementwiseTile = 512;
inline constexpr int64_t kReductionTile = 8192;  // input elements per block and iteration

// Largest divisor of n that is at most `limit`.
int64_t divisorAtMost(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d) {
    if (n % d == 0) return d;
  }
  return 1;
}

// Prefers multiples of `multiple` (tensor-core shapes) among divisors of n up to `limit`.
int64_t tileExtent(int64_t n, int64_t limit, int64_t multiple) {
  for (int64_t d = std::min(n, limit); d >= multiple; --d) {
    if (n % d == 0 && d % multiple == 0) return d;
  }
  return divisorAtMost(n, limit);
}

// A tiling of an output: tile extents and, per grid axis, the dim it splits.
struct Tiling {
  Dims tile;
  std::array<int64_t, graph::kGridAxes> grid{1, 1, 1};
  AxisMap map{graph::kReplicated, graph::kReplicated, graph::kReplicated};
};

// Splits dims (outermost first, `splittable` ones only) until a tile has at most
// `target` elements or three dims are split; the biggest split goes on grid x.
Tiling tileOutput(const Dims& shape, const std::vector<bool>& splittable, int64_t target) {
  Tiling tiling;
  tiling.tile = shape;
  std::vector<std::pair<int64_t, int>> splits;  // (parts, dim)
  for (size_t d = 0; d < shape.size() && splits.size() < graph::kGridAxes; ++d) {
    const int64_t elements = graph::elementCount(tiling.tile);
    if (elements <= target || !splittable[d] || shape[d] == 1) continue;
    const int64_t rest = elements / shape[d];
    // Smallest part count that brings the tile to the target, else the whole dim.
    int64_t parts = shape[d];
    for (int64_t p = 2; p <= shape[d]; ++p) {
      if (shape[d] % p == 0 && rest * (shape[d] / p) <= target) {
        parts = p;
        break;
      }
    }
    tiling.tile[d] = shape[d] / parts;
    splits.push_back({parts, static_cast<int>(d)});
  }
  std::stable_sort(splits.begin(), splits.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t axis = 0; axis < splits.size(); ++axis) {
    if (splits[axis].first > graph::maxGridExtent(static_cast<int>(axis))) {
      throw UserError("lowering", "a grid of " + std::to_string(splits[axis].first) +
                                      " blocks along one axis exceeds the CUDA limit");
    }
    tiling.grid[axis] = splits[axis].first;
    tiling.map[axis] = splits[axis].second;
  }
  return tiling;
}

// The imap of an operand of an element-wise op: its size-1 (broadcast) dims are replicated.
AxisMap operandMap(const Tiling& tiling, const Dims& operandShape) {
  AxisMap map = tiling.map;
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (map[axis] != graph::kReplicated && operandShape[map[axis]] == 1) {
      map[axis] = graph::kReplicated;
    }
  }
  return map;
}

std::vector<graph::TensorDesc> inputDescs(const graph::KernelGraph& graph,
                                          const graph::KernelOp& op) {
  std::vector<graph::TensorDesc> descs;
  for (TensorId t : op.inputs) descs.push_back(graph.tensors[t]);
  return descs;
}

graph::BlockGraph lowerMatmul(const std::vector<graph::TensorDesc>& in, const Dims& out,
                              const Target& target) {
  const int rank = static_cast<int>(out.size());
  const int64_t m = out[rank - 2];
  const int64_t n = out[rank - 1];
  const int64_t k = in[0].shape[rank - 1];
  int64_t batches = 1;
  for (int d = 0; d < rank - 2; ++d) batches *= out[d];
  // 128x128 tiles where they still give every multiprocessor a block; 64x64 otherwise.
  const bool large = m % 128 == 0 && n % 128 == 0 &&
                     (m / 128) * (n / 128) * batches >= target.streamingMultiprocessors;
  const int64_t tileM = large ? 128 : tileExtent(m, 64, 16);
  const int64_t tileN = large ? 128 : tileExtent(n, 64, 16);
  const int64_t tileK = tileExtent(k, 32, 16);
  const int threads = large ? 256 : 128;
  std::array<int64_t, graph::kGridAxes> grid{m / tileM, n / tileN, 1};
  int batchDim = graph::kReplicated;
  for (int d = 0; d < rank - 2; ++d) {
    if (out[d] > 1 && (batchDim == graph::kReplicated || out[d] > out[batchDim])) batchDim = d;
  }
  if (batchDim != graph::kReplicated) grid[2] = out[batchDim];
  const auto onGrid = [&](int axis, int dim) { return grid[axis] > 1 ? dim : graph::kReplicated; };
  const int64_t forloop = k / tileK;
  graph::BlockGraphBuilder builder(grid, threads, forloop, in);
  const TensorId a =
      builder.input(0, {onGrid(0, rank - 2), graph::kReplicated, onGrid(2, batchDim)},
                    forloop > 1 ? rank - 1 : graph::kReplicated, "a");
  const TensorId b =
      builder.input(1, {graph::kReplicated, onGrid(1, rank - 1), onGrid(2, batchDim)},
                    forloop > 1 ? rank - 2 : graph::kReplicated, "b");
  const TensorId c = builder.op(OpKind::Matmul, {a, b}, {}, "c");
  const TensorId acc = builder.op(OpKind::AccumSum, {c}, {}, "c_acc");
  builder.output(acc, {onGrid(0, rank - 2), onGrid(1, rank - 1), onGrid(2, batchDim)});
  return builder.block();
}

graph::BlockGraph lowerElementwise(const graph::KernelOp& op,
                                   const std::vector<graph::TensorDesc>& in, const Dims& out,
                                   const Target& target) {
  // A block per multiprocessor's share, within [kSmallElementwiseTile, kElementwiseTile].
  const int64_t share = graph::elementCount(out) / target.streamingMultiprocessors;
  const int64_t elements = std::clamp(share, kSmallElementwiseTile, kElementwiseTile);
  const Tiling tiling = tileOutput(out, std::vector<bool>(out.size(), true), elements);
  graph::BlockGraphBuilder builder(tiling.grid, 128, 1, in);
  std::vector<TensorId> operands;
  for (size_t i = 0; i < in.size(); ++i) {
    operands.push_back(builder.input(static_cast<int>(i), operandMap(tiling, in[i].shape),
                                     graph::kReplicated, "x" + std::to_string(i)));
  }
  builder.output(builder.op(op.kind, operands, op.attrs, "y"), tiling.map);
  return builder.block();
}

graph::BlockGraph lowerReduction(const graph::KernelOp& op,
                                 const std::vector<graph::TensorDesc>& in, const Dims& out) {
  const int dim = op.attrs.dim;
  std::vector<bool> splittable(out.size(), true);
  splittable[dim] = false;
  const int64_t n = in[0].shape[dim];
  const Tiling tiling =
      tileOutput(out, splittable, kReductionTile / n > 0 ? kReductionTile / n : 1);
  if (graph::keepsShape(op.kind)) {
    graph::BlockGraphBuilder builder(tiling.grid, 128, 1, in);
    const TensorId x = builder.input(0, tiling.map, graph::kReplicated, "x");
    builder.output(builder.op(op.kind, {x}, op.attrs, "y"), tiling.map);
    return builder.block();
  }
  // Iterations split the reduced dim into parts that keep whole groups of `to`.
  const int64_t groups = op.kind == OpKind::ReduceSum ? n / op.attrs.to : n;
  const int64_t kept = graph::elementCount(tiling.tile) / tiling.tile[dim];
  int64_t forloop = 1;
  while (kept * (n / forloop) > kReductionTile && forloop < groups) {
    int64_t next = forloop + 1;
    while (groups % next != 0) ++next;
    forloop = next;
  }
  graph::BlockGraphBuilder builder(tiling.grid, 128, forloop, in);
  const TensorId x = builder.input(0, tiling.map, forloop > 1 ? dim : graph::kReplicated, "x");
  TensorId y = builder.op(op.kind, {x}, op.attrs, "y");
  if (forloop > 1) {
    y = builder.op(op.kind == OpKind::ReduceSum ? OpKind::AccumSum : OpKind::AccumMax, {y}, {},
                   "y_acc");
  }
  builder.output(y, tiling.map);
  return builder.block();
}

}  // namespace

graph::KernelOp lowerKernelOp(const graph::KernelGraph& graph, const graph::KernelOp& op,
                              const Target& target) {
  if (op.kind == OpKind::BlockGraph) return op;
  const std::vector<graph::TensorDesc> in = inputDescs(graph, op);
  const Dims& out = graph.tensors[op.outputs.at(0)].shape;
  graph::KernelOp lowered;
  lowered.kind = OpKind::BlockGraph;
  lowered.name = op.name.empty()
                     ? graph.tensors[op.outputs[0]].name + "_" + std::string(graph::opName(op.kind))
                     : op.name;
  lowered.inputs = op.inputs;
  lowered.outputs = op.outputs;
  try {
    switch (graph::opInfo(op.kind).opClass) {
      case graph::OpClass::Matmul:
        lowered.block = lowerMatmul(in, out, target);
        break;
      case graph::OpClass::Unary:
      case graph::OpClass::Binary:
        lowered.block = lowerElementwise(op, in, out, target);
        break;
      case graph::OpClass::Reduction:
        lowered.block = lowerReduction(op, in, out);
        break;
      default:
        throw UserError(lowered.name, "has no default block-graph schedule");
    }
  } catch (const graph::ShapeError& e) {
    throw UserError("lowering " + lowered.name, e.what());
  }
  return lowered;
}

graph::Schedule lowerPredefinedOps(const graph::Schedule& schedule, const Target& target) {
  graph::Schedule lowered = schedule;
  for (graph::KernelOp& op : lowered.graph.ops) op = lowerKernelOp(schedule.graph, op, target);
  graph::validateSchedule(lowered);
  return lowered;
}

graph::Schedule lowerProgram(const graph::Program& program, const Target& target) {
  graph::Schedule schedule;
  schedule.name = program.name + ".default";
  schedule.program = program;
  schedule.graph = program;
  return lowerPredefinedOps(schedule, target);
}

}  // namespace mugraph::plan
