// Whether two schedules run the same kernels, whatever their records say beside the work: the
// thread-graph record (fusion: which element-wise ops a plan may run in a producer's epilogue;
// the plan decides what it honors), accumulators of a loop that runs once (accum_* over one
// iteration is its input), the order of a block graph's outputs, which grid axes carry the
// splits (a grid (1, 251) is the grid (251, 1)), and a declared tile that is the one the
// splits give anyway (⌈n / parts⌉). Schedules written by
// hand or by a script differ from the search's in exactly these; the hash of the normalized
// schedule is then equal.
#pragma once

#include <algorithm>
#include <array>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "graph/hash.h"
#include "graph/ir.h"

namespace mugraph::search::testing {

inline void dropOneIterationAccumulators(graph::BlockGraph& block) {
  if (block.forloop != 1) return;
  std::vector<graph::TensorId> replaced(block.tensors.size());
  std::iota(replaced.begin(), replaced.end(), 0);
  std::vector<graph::BlockOp> kept;
  for (graph::BlockOp op : block.ops) {
    for (graph::TensorId& in : op.inputs) in = replaced[in];
    if (graph::isAccumulator(op.kind)) {
      replaced[op.output] = op.inputs[0];
      continue;
    }
    kept.push_back(std::move(op));
  }
  block.ops = std::move(kept);
}

// Declared input tiles equal to the tiles the grid and loop give without them, dropped.
inline void dropRedundantTiles(const graph::KernelGraph& g, const graph::KernelOp& kernel,
                               graph::BlockGraph& block) {
  for (graph::BlockOp& op : block.ops) {
    if (op.kind != graph::OpKind::Input || op.tile.empty()) continue;
    const graph::Dims& shape = g.tensors[kernel.inputs[op.kernelTensor]].shape;
    bool redundant = true;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t part = shape[d];
      for (int a = 0; a < graph::kGridAxes; ++a) {
        if (block.grid[a] > 1 && op.imap[a] == static_cast<int>(d)) {
          part = (part + block.grid[a] - 1) / block.grid[a];
        }
      }
      if (block.forloop > 1 && op.fmap == static_cast<int>(d)) {
        part = (part + block.forloop - 1) / block.forloop;
      }
      redundant = redundant && part == op.tile[d];
    }
    if (redundant) op.tile.clear();
  }
}

// The split axes moved to the front, in order.
inline void compactGrid(graph::BlockGraph& block) {
  std::array<int64_t, graph::kGridAxes> grid{1, 1, 1};
  std::array<int, graph::kGridAxes> from{-1, -1, -1};
  int next = 0;
  for (int a = 0; a < graph::kGridAxes; ++a) {
    if (block.grid[a] > 1) {
      grid[next] = block.grid[a];
      from[next++] = a;
    }
  }
  for (graph::BlockOp& op : block.ops) {
    graph::AxisMap imap = op.imap, omap = op.omap;
    for (int a = 0; a < graph::kGridAxes; ++a) {
      imap[a] = from[a] < 0 ? graph::kReplicated : op.imap[from[a]];
      omap[a] = from[a] < 0 ? graph::kReplicated : op.omap[from[a]];
    }
    op.imap = imap;
    op.omap = omap;
  }
  block.grid = grid;
}

// Outputs in the order of (dtype, shape, kind of the op making the written tile).
inline void sortOutputs(graph::KernelGraph& g, graph::KernelOp& kernel) {
  graph::BlockGraph& block = *kernel.block;
  std::vector<int> writer(kernel.outputs.size(), -1);
  std::vector<graph::OpKind> madeBy(block.tensors.size(), graph::OpKind::Input);
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (op.kind == graph::OpKind::Output) {
      writer[op.kernelTensor] = static_cast<int>(o);
    } else if (op.output >= 0) {
      madeBy[op.output] = op.kind;
    }
  }
  const auto key = [&](size_t i) {
    const graph::TensorDesc& desc = g.tensors[kernel.outputs[i]];
    const graph::BlockOp& out = block.ops[writer[i]];
    return std::tuple(std::string(graph::dtypeName(desc.dtype)), desc.shape,
                      std::string(graph::opName(madeBy[out.inputs[0]])));
  };
  std::vector<size_t> order(kernel.outputs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  std::vector<graph::TensorId> outputs;
  std::vector<int> position(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    outputs.push_back(kernel.outputs[order[i]]);
    position[order[i]] = static_cast<int>(i);
  }
  for (graph::BlockOp& op : block.ops) {
    if (op.kind == graph::OpKind::Output) op.kernelTensor = position[op.kernelTensor];
  }
  kernel.outputs = std::move(outputs);
}

inline uint64_t sameKernelsHash(graph::Schedule schedule) {
  for (graph::KernelOp& kernel : schedule.graph.ops) {
    if (!kernel.block) continue;
    kernel.block->fusion.clear();
    dropOneIterationAccumulators(*kernel.block);
    dropRedundantTiles(schedule.graph, kernel, *kernel.block);
    compactGrid(*kernel.block);
    sortOutputs(schedule.graph, kernel);
  }
  return graph::scheduleHash(schedule);
}

}  // namespace mugraph::search::testing
