// Template definitions of the reference interpreter (declared in verify/interpreter.h). A new
// number domain includes this header and instantiates evaluate/applyOp for its type, as
// interpreter.cpp does for double. Block graphs run literally: grid loop, for-loop, tiles.
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>

#include "graph/error.h"
#include "verify/apply_op_impl.h"
#include "verify/evaluation_plan.h"
#include "verify/interpreter.h"

namespace mugraph::verify::detail {

using Offset4 = std::array<int64_t, graph::kMaxRank>;

// Copies the real elements of the tile at `offset` of `device` into `tile` (row-major over
// `shape`, the tile shape cut short where a partial part ends: elements past it do not exist).
template <class T>
void readTile(const HostTensor<T>& device, const graph::Dims& shape, const Offset4& offset,
              HostTensor<T>& tile) {
  const Shape4 from = paddedShape(device.shape);
  const Shape4 to = paddedShape(shape);
  tile.shape = shape;
  tile.data.resize(static_cast<size_t>(graph::elementCount(tile.shape)), NumberDomain<T>::zero());
  const T* base = device.data.data();
  for (int d = 0; d < graph::kMaxRank; ++d) base += offset[d] * from.stride[d];
  for (int64_t i0 = 0; i0 < to.extent[0]; ++i0) {
    for (int64_t i1 = 0; i1 < to.extent[1]; ++i1) {
      for (int64_t i2 = 0; i2 < to.extent[2]; ++i2) {
        const T* src = base + i0 * from.stride[0] + i1 * from.stride[1] + i2 * from.stride[2];
        T* dst = tile.data.data() + i0 * to.stride[0] + i1 * to.stride[1] + i2 * to.stride[2];
        std::copy_n(src, to.extent[3], dst);
      }
    }
  }
}

// Copies `tile` into `device` at `offset`; blocks write disjoint tiles, so this is thread-safe.
template <class T>
void writeTile(const HostTensor<T>& tile, const Offset4& offset, HostTensor<T>& device) {
  const Shape4 from = paddedShape(tile.shape);
  const Shape4 to = paddedShape(device.shape);
  T* base = device.data.data();
  for (int d = 0; d < graph::kMaxRank; ++d) base += offset[d] * to.stride[d];
  for (int64_t i0 = 0; i0 < from.extent[0]; ++i0) {
    for (int64_t i1 = 0; i1 < from.extent[1]; ++i1) {
      for (int64_t i2 = 0; i2 < from.extent[2]; ++i2) {
        const T* src =
            tile.data.data() + i0 * from.stride[0] + i1 * from.stride[1] + i2 * from.stride[2];
        T* dst = base + i0 * to.stride[0] + i1 * to.stride[1] + i2 * to.stride[2];
        std::copy_n(src, from.extent[3], dst);
      }
    }
  }
}

// Index into `from` (a tile that broadcasts to `to`'s shape) of each element of `to`.
inline std::vector<int64_t> broadcastIndex(const graph::Dims& to, const graph::Dims& from) {
  const Shape4 target = paddedShape(to);
  Shape4 source = paddedShape(from);
  for (int d = 0; d < graph::kMaxRank; ++d) {
    if (source.extent[d] == 1) source.stride[d] = 0;
  }
  std::vector<int64_t> index(static_cast<size_t>(graph::elementCount(to)));
  for (size_t e = 0; e < index.size(); ++e) {
    int64_t rest = static_cast<int64_t>(e), at = 0;
    for (int d = graph::kMaxRank - 1; d >= 0; --d) {
      at += (rest % target.extent[d]) * source.stride[d];
      rest /= target.extent[d];
    }
    index[e] = at;
  }
  return index;
}

// One accumulator update at `iteration`. accum_sum starts from zero(); accum_max from the
// first tile, keeping its previous value in `previousMax` for the rescaling sums that read
// it; accum_rescaled_sum starts from the first tile and then follows
// acc_i = acc_{i-1}·exp(m_{i-1} − m_i) + x_i (graph/ir.h).
template <class T>
void accumulate(const BlockStep& step, int64_t iteration, const TrialMeaning& meaning,
                std::vector<HostTensor<T>>& tiles, std::vector<HostTensor<T>>& previousMax) {
  using Domain = NumberDomain<T>;
  const HostTensor<T>& tile = tiles[step.inputs[0]];
  HostTensor<T>& accumulator = tiles[step.output];
  const bool first = iteration == 0;
  switch (step.kind) {
    case graph::OpKind::AccumSum:
      if (first) accumulator = filled(tile.shape, Domain::zero());
      for (size_t i = 0; i < tile.data.size(); ++i) {
        accumulator.data[i] = Domain::add(accumulator.data[i], tile.data[i]);
      }
      return;
    case graph::OpKind::AccumMax:
      if (first) {
        accumulator = tile;
        return;
      }
      previousMax[step.output] = accumulator;
      for (size_t i = 0; i < tile.data.size(); ++i) {
        accumulator.data[i] = Domain::max(accumulator.data[i], tile.data[i], meaning);
      }
      return;
    case graph::OpKind::AccumRescaledSum: {
      if (first) {
        accumulator = tile;
        return;
      }
      const HostTensor<T>& current = tiles[step.inputs[1]];
      const HostTensor<T>& previous = previousMax[step.inputs[1]];
      const std::vector<int64_t> at = broadcastIndex(tile.shape, current.shape);
      for (size_t i = 0; i < tile.data.size(); ++i) {
        const T factor =
            Domain::exp(Domain::sub(previous.data[at[i]], current.data[at[i]]), meaning);
        accumulator.data[i] = Domain::add(Domain::mul(accumulator.data[i], factor), tile.data[i]);
      }
      return;
    }
    default:
      throw UserError(std::string(graph::opName(step.kind)), "is not an accumulator");
  }
}

template <class T>
HostTensor<T> computeStep(const BlockPlan& plan, const BlockStep& step, const BlockIndex& index,
                          int64_t iteration, const std::vector<HostTensor<T>>& tiles,
                          const TrialMeaning& meaning) {
  std::vector<const HostTensor<T>*> operands;
  operands.reserve(step.inputs.size());
  for (graph::TensorId t : step.inputs) operands.push_back(&tiles[t]);
  const MaskFrame frame = graph::opInfo(step.kind).hasQueries
                              ? plan.maskFrame(step.inputs[0], index, iteration)
                              : MaskFrame{};
  return applyOp<T>(step.kind, step.attrs, operands, meaning, frame);
}

// Everything one thread block does: the for-loop over tiles, the epilogue after the
// accumulators, then the output tiles written into the kernel's device tensors (`device`; the
// tensors it reads are `read`, by kernel-graph tensor id).
template <class T>
void runBlock(const BlockPlan& plan, const BlockIndex& index, const TrialMeaning& meaning,
              std::vector<HostTensor<T>>& tiles, std::vector<HostTensor<T>>& previousMax,
              const std::vector<const HostTensor<T>*>& read, std::vector<HostTensor<T>>& device) {
  // Iterations past a partial part's end are empty: the block skips them (graph/tile_splits.h).
  const int64_t iterations = plan.iterationsOf(index);
  if (iterations == 0) {
    // An empty part: its accumulators hold their identities for the ops after the loop.
    for (const BlockStep& step : plan.perIteration) {
      if (!graph::isAccumulator(step.kind)) continue;
      tiles[step.output] = filled(plan.realShapeOf(step.output, index),
                                  step.kind == graph::OpKind::AccumMax
                                      ? NumberDomain<T>::negInf()
                                      : NumberDomain<T>::zero());
    }
    for (const BlockStep& step : plan.running) {
      if (step.kind == graph::OpKind::Input) {
        const TilePlacement& placement = plan.placements[step.placement];
        readTile(*read[placement.deviceTensor], placement.realShape(index, 0),
                 placement.offset(index, 0), tiles[step.output]);
      } else {
        tiles[step.output] = computeStep(plan, step, index, 0, tiles, meaning);
      }
    }
  }
  for (int64_t iteration = 0; iteration < iterations; ++iteration) {
    for (const BlockStep& step : plan.perIteration) {
      if (step.kind == graph::OpKind::Input) {
        const TilePlacement& placement = plan.placements[step.placement];
        // A tile without fmap is the same every iteration and only its input op writes it.
        if (iteration > 0 && placement.loopDim == graph::kReplicated) continue;
        readTile(*read[placement.deviceTensor], placement.realShape(index, iteration),
                 placement.offset(index, iteration), tiles[step.output]);
      } else if (graph::isAccumulator(step.kind)) {
        accumulate(step, iteration, meaning, tiles, previousMax);
      } else {
        tiles[step.output] = computeStep(plan, step, index, iteration, tiles, meaning);
      }
    }
  }
  for (const BlockStep& step : plan.postLoop)
    tiles[step.output] = computeStep(plan, step, index, 0, tiles, meaning);
  for (const BlockStep& step : plan.outputs) {
    const TilePlacement& placement = plan.placements[step.placement];
    const HostTensor<T>& tile = tiles[step.inputs[0]];
    if (tile.shape != placement.realShape(index, 0)) {
      throw UserError("output tile", "computes " + graph::formatDims(tile.shape) +
                                         " real elements where the block's part is " +
                                         graph::formatDims(placement.realShape(index, 0)));
    }
    writeTile(tile, placement.offset(index, 0), device[placement.deviceTensor]);
  }
}

// Blocks are independent and write disjoint output tiles, so the grid runs in parallel.
template <class T>
void runBlockGraph(const BlockPlan& plan, const graph::KernelGraph& graph,
                   const graph::KernelOp& kernel, const TrialMeaning& meaning,
                   const std::vector<const HostTensor<T>*>& read,
                   std::vector<HostTensor<T>>& device) {
  for (graph::TensorId t : kernel.outputs) {
    device[t] = filled(graph.tensors[t].shape, NumberDomain<T>::zero());
  }
  const int64_t gridX = plan.grid[0];
  const int64_t gridY = plan.grid[1];
  const int64_t blockCount = gridX * gridY * plan.grid[2];
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, blockCount, 1),
                    [&](const tbb::blocked_range<int64_t>& range) {
                      std::vector<HostTensor<T>> tiles(static_cast<size_t>(plan.tileCount));
                      std::vector<HostTensor<T>> previousMax(tiles.size());
                      for (int64_t b = range.begin(); b < range.end(); ++b) {
                        const BlockIndex index{b % gridX, (b / gridX) % gridY, b / (gridX * gridY)};
                        runBlock(plan, index, meaning, tiles, previousMax, read, device);
                      }
                    });
}

}  // namespace mugraph::verify::detail

namespace mugraph::verify {

template <class T>
TensorMap<T> evaluate(const graph::KernelGraph& graph, const TensorMap<T>& inputs,
                      const TrialMeaning& meaning) {
  const KernelPlan plan = planKernelGraph(graph);
  // Computed tensors live in `values`; `read` points at each tensor's value, the caller's for
  // inputs (which are not copied).
  std::vector<HostTensor<T>> values(graph.tensors.size());
  std::vector<const HostTensor<T>*> read(graph.tensors.size(), nullptr);
  for (graph::TensorId id : graph.inputs) {
    const graph::TensorDesc& desc = graph.tensors[id];
    const std::string where = "input '" + desc.name + "'";
    const auto found = inputs.find(desc.name);
    if (found == inputs.end()) {
      throw UserError(where,
                      "is missing (the graph expects " + graph::formatDims(desc.shape) + ")");
    }
    const HostTensor<T>& given = found->second;
    if (given.shape != desc.shape) {
      throw UserError(where, "has shape " + graph::formatDims(given.shape) +
                                 " but the graph declares " + graph::formatDims(desc.shape));
    }
    checkTensorData(given.shape, given.data.size(), where);
    read[id] = &given;
  }
  // A tensor is released after the step that reads it last (at real shapes the intermediates of
  // a whole program would not fit in memory together); outputs are kept.
  std::vector<size_t> lastUse(graph.tensors.size(), plan.steps.size());
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    for (graph::TensorId t : plan.steps[s].op->inputs) lastUse[t] = s;
  }
  for (graph::TensorId t : graph.outputs) lastUse[t] = plan.steps.size();
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const graph::KernelOp& op = *plan.steps[s].op;
    if (op.kind == graph::OpKind::BlockGraph) {
      detail::runBlockGraph(plan.steps[s].block, graph, op, meaning, read, values);
    } else {
      std::vector<const HostTensor<T>*> operands;
      for (graph::TensorId t : op.inputs) operands.push_back(read[t]);
      values[op.outputs[0]] = applyOp<T>(op.kind, op.attrs, operands, meaning);
    }
    for (graph::TensorId t : op.outputs) read[t] = &values[t];
    for (graph::TensorId t : op.inputs) {
      if (lastUse[t] == s) values[t] = HostTensor<T>{};
    }
  }
  TensorMap<T> outputs;
  for (graph::TensorId t : graph.outputs) outputs[graph.tensors[t].name] = *read[t];
  return outputs;
}

}  // namespace mugraph::verify
