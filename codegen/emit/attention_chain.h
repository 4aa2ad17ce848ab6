// The chain of ops an attention block graph on the sm_90 warpgroup path runs in registers
// (plan/paths/warpgroup_attention_plan.h): element-wise ops, last-dim reductions, running
// maxima and rescaled sums on S, O and their row vectors, each in the wgmma accumulator
// layout of its FragmentRole, with the softmax's scale folded into exp2 where every use
// allows, and the causal mask across the diagonal. The warpgroup attention emitter
// (warpgroup_attention.cpp) prints the loop, the copies and the two matmuls around it.
#pragma once

#include <string>

#include "codegen/emit/context.h"
#include "plan/paths/warpgroup_attention_plan.h"

namespace mugraph::codegen {

class AttentionChain {
 public:
  AttentionChain(const EmitContext& context, const plan::WarpgroupAttentionPlan& at);

  // Block op `index` of the chain (neither matmul, input nor output), for iteration `it`.
  void emitOp(int index);
  // Input op `index` (one of at.scoreInputs): this thread's elements of its tile in S's
  // layout, read from global memory for iteration `it`, zero past the real rows and keys.
  void loadScoreInput(int index);

  std::string name(graph::TensorId t) const { return "t" + std::to_string(t); }
  // Registers per thread of a tile of role `role`.
  int64_t width(plan::FragmentRole role) const;
  // The causal_mask op on S, or -1: with it the loop stops after the last key tile below the
  // diagonal, and only tiles across it are masked.
  int causalMaskOp() const;
  // "first, last": the block's query rows in the whole row dim.
  std::string causalRows(int mask) const;
  // "cols, queries" of the mask (graph/ops.h).
  std::string causalShape(int mask) const;

 private:
  void emitCausalMask(int index);
  std::string realKv(graph::TensorId t) const;
  enum class Padding { Unknown, NegativeInfinity, Zero };
  Padding keyPadding(graph::TensorId t) const;
  bool summedOverKv(graph::TensorId t) const;
  std::string operand(graph::TensorId t, plan::FragmentRole role) const;
  bool heldUnscaled(int index) const;
  bool deferrable(graph::TensorId t) const;
  bool foldedIntoExp(int index) const;
  double unscaledBy(graph::TensorId t) const;

  const EmitContext& context_;
  CudaWriter& out_;
  const plan::WarpgroupAttentionPlan& at_;
  const graph::BlockGraph& block_;
};

}  // namespace mugraph::codegen
