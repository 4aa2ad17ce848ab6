// Whether two schedules run the same kernels, whatever their records say beside the work: the
// thread-graph record (fusion: which element-wise ops a plan may run in a producer's epilogue;
// the plan decides what it honors), accumulators of a loop that runs once (accum_* over one
// iteration is its input), and the order of a block graph's outputs. Schedules written by
// hand or by a script differ from the search's in exactly these; the hash of the normalized
// schedule is then equal.
#pragma once

#include <algorithm>
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
    sortOutputs(schedule.graph, kernel);
  }
  return graph::scheduleHash(schedule);
}

}  // namespace mugraph::search::testing
