// Planning attention on the sm_90 warpgroup path (see warpgroup_attention_plan.h).
#include "plan/paths/warpgroup_attention_plan.h"

#include <algorithm>

#include "plan/kernel_plan.h"

namespace mugraph::plan {
namespace {

using graph::OpKind;
using graph::TensorId;

// The roles of every tile of an attention-shaped block graph (WarpgroupAttentionPlan), or
// nothing where an op does not fit them.
// Whether input tile `t` can be read in S's fragment layout: its dims those of S or 1.
bool scoreShaped(const graph::BlockGraph& block, TensorId t, TensorId s) {
  const graph::Dims& tile = block.tensors[t].shape;
  const graph::Dims& scores = block.tensors[s].shape;
  if (tile.size() != scores.size()) return false;
  for (size_t d = 0; d < tile.size(); ++d) {
    if (tile[d] != scores[d] && tile[d] != 1) return false;
  }
  return true;
}

// `operands`: the input ops of Q, K and V; any other input op is S-shaped (scoreInputs) or
// the block graph does not qualify.
std::optional<std::vector<FragmentRole>> attentionRoles(const KernelPlan& plan, int first,
                                                        int second,
                                                        const std::vector<int>& operands,
                                                        std::vector<int>& scoreInputs) {
  const graph::BlockGraph& block = *plan.block;
  std::vector<FragmentRole> roles(block.tensors.size(), FragmentRole::None);
  const int last = static_cast<int>(block.tensors[block.ops[first].output].shape.size()) - 1;
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    const int index = static_cast<int>(o);
    if (op.kind == OpKind::Input &&
        std::find(operands.begin(), operands.end(), index) == operands.end()) {
      if (!isSixteenBit(block.tensors[op.output].dtype) &&
          block.tensors[op.output].dtype != graph::DType::F32) {
        return std::nullopt;
      }
      if (!scoreShaped(block, op.output, block.ops[first].output)) return std::nullopt;
      roles[op.output] = FragmentRole::S;
      scoreInputs.push_back(index);
      continue;
    }
    if (op.kind == OpKind::Input || op.kind == OpKind::Output) continue;
    // After the loop only accumulators (and what is computed from them) exist.
    if (!runsInLoop(plan, index)) {
      for (TensorId t : op.inputs) {
        const int producer = plan.producer[t];
        if (runsInLoop(plan, producer) && !graph::isAccumulator(block.ops[producer].kind)) {
          return std::nullopt;
        }
      }
    }
    FragmentRole role = FragmentRole::None;
    if (index == first) {
      role = FragmentRole::S;
    } else if (index == second) {
      if (roles[op.inputs[0]] != FragmentRole::S) return std::nullopt;
      // Its only reader accumulates it (in place, in the O accumulators).
      if (plan.consumers[op.output].size() != 1) return std::nullopt;
      const graph::BlockOp& reader = block.ops[plan.consumers[op.output][0]];
      if (reader.kind != OpKind::AccumSum && reader.kind != OpKind::AccumRescaledSum) {
        return std::nullopt;
      }
      role = FragmentRole::O;
    } else if (graph::isElementwise(op.kind)) {
      bool s = false, o = false, row = false;
      for (TensorId t : op.inputs) {
        s = s || roles[t] == FragmentRole::S;
        o = o || roles[t] == FragmentRole::O;
        row = row || roles[t] == FragmentRole::Row;
        if (roles[t] == FragmentRole::None) return std::nullopt;
      }
      if (s && o) return std::nullopt;
      role = s ? FragmentRole::S : o ? FragmentRole::O : FragmentRole::Row;
      // The mask needs each element's key position: only S's layout gives it.
      if (op.kind == OpKind::CausalMask && role != FragmentRole::S) return std::nullopt;
      (void)row;
    } else if (op.kind == OpKind::ReduceMax || op.kind == OpKind::ReduceSum) {
      if (roles[op.inputs[0]] != FragmentRole::S || op.attrs.dim != last) return std::nullopt;
      if (op.kind == OpKind::ReduceSum && op.attrs.to != 1) return std::nullopt;
      role = FragmentRole::Row;
    } else if (op.kind == OpKind::AccumMax) {
      if (roles[op.inputs[0]] != FragmentRole::Row) return std::nullopt;
      role = FragmentRole::Row;
    } else if (op.kind == OpKind::AccumSum || op.kind == OpKind::AccumRescaledSum) {
      if (op.kind == OpKind::AccumRescaledSum &&
          block.ops[plan.producer[op.inputs[1]]].kind != OpKind::AccumMax) {
        return std::nullopt;
      }
      const FragmentRole in = roles[op.inputs[0]];
      if (in == FragmentRole::Row) {
        role = FragmentRole::Row;
      } else if (in == FragmentRole::O && plan.producer[op.inputs[0]] == second) {
        role = FragmentRole::O;
      } else {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
    roles[op.output] = role;
  }
  return roles;
}

}  // namespace

std::optional<WarpgroupAttentionPlan> planWarpgroupAttention(const KernelPlan& plan,
                                                             const Target& target) {
  if (!target.warpgroupMma) return std::nullopt;
  const graph::BlockGraph& block = *plan.block;
  WarpgroupAttentionPlan at;
  at.limits = target.warpgroup;
  const WarpgroupLimits& limits = at.limits;
  if (block.threads % limits.threads != 0 || block.threads < 2 * limits.threads) {
    return std::nullopt;
  }
  at.producer = true;
  at.consumers = static_cast<int>(block.threads / limits.threads) - 1;
  std::vector<int> matmuls;
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (op.kind == OpKind::Matmul) matmuls.push_back(static_cast<int>(o));
    if (op.kind == OpKind::Output) {
      if (at.outputOp >= 0) return std::nullopt;
      at.outputOp = static_cast<int>(o);
    }
  }
  if (matmuls.size() != 2 || at.outputOp < 0) return std::nullopt;
  const auto inputOp = [&](TensorId tile) {
    const int op = plan.producer[tile];
    return block.ops[op].kind == OpKind::Input ? op : -1;
  };
  const auto perIteration = [&](int op) {
    return block.forloop > 1 && block.ops[op].fmap != graph::kReplicated;
  };
  at.firstMatmulOp = matmuls[0];
  at.secondMatmulOp = matmuls[1];
  const graph::BlockOp& first = block.ops[at.firstMatmulOp];
  const graph::BlockOp& second = block.ops[at.secondMatmulOp];
  const int qOp = inputOp(first.inputs[0]);
  const int kOp = inputOp(first.inputs[1]);
  const int vOp = inputOp(second.inputs[1]);
  if (qOp < 0 || kOp < 0 || vOp < 0 || perIteration(qOp) || !perIteration(kOp) ||
      !perIteration(vOp)) {
    return std::nullopt;
  }
  const std::optional<std::vector<FragmentRole>> roles =
      attentionRoles(plan, at.firstMatmulOp, at.secondMatmulOp, {qOp, kOp, vOp}, at.scoreInputs);
  if (!roles) return std::nullopt;
  at.roles = *roles;
  if (at.roles[block.ops[at.outputOp].inputs[0]] != FragmentRole::O) return std::nullopt;

  const graph::Dims& qTile = block.tensors[first.inputs[0]].shape;
  const graph::Dims& sTile = block.tensors[first.output].shape;
  const graph::Dims& oTile = block.tensors[second.output].shape;
  const int rank = static_cast<int>(qTile.size());
  at.dtype = block.tensors[first.inputs[0]].dtype;
  for (TensorId t : {first.inputs[0], first.inputs[1], second.inputs[1]}) {
    if (!isSixteenBit(block.tensors[t].dtype) || block.tensors[t].dtype != at.dtype) {
      return std::nullopt;
    }
  }
  at.rows = qTile[rank - 2];
  at.d = qTile[rank - 1];
  at.kv = sTile[rank - 1];
  at.dv = oTile[rank - 1];  // V is [kv, dv]
  if (at.rows != limits.wgmmaRows * at.consumers) return std::nullopt;
  if (at.kv != 64 && at.kv != 128) return std::nullopt;
  if (at.d % limits.wgmmaK != 0 || !isWgmmaWidth(at.dv) || at.dv / 2 > limits.maxAccumulators) {
    return std::nullopt;
  }

  // Q and K are read along d and V along dv in whole wgmma steps or widths only: a head dim of
  // no whole number of boxes is padded.
  constexpr bool kMayGather = false, kPadLastBox = true;
  std::optional<BulkOperand> q =
      planOperand(plan, limits, qOp, rank - 2, rank - 1, at.maps, kMayGather, kPadLastBox);
  std::optional<BulkOperand> k =
      planOperand(plan, limits, kOp, rank - 1, rank - 2, at.maps, kMayGather, kPadLastBox);
  std::optional<BulkOperand> v =
      planOperand(plan, limits, vOp, rank - 1, rank - 2, at.maps, kMayGather, kPadLastBox);
  if (!q || !k || !v) return std::nullopt;
  at.q = *q;
  at.k = *k;
  at.v = *v;

  at.occupancy = block.occupancy;
  budgetRegisters(at, target);
  // S, O and P (packed) plus the chain's temporaries; S, O and P within what ptxas compiles
  // the kernel with.
  const int held = static_cast<int>(at.kv / 2 + at.dv / 2 + at.kv / 4 +
                                    at.kv / 2 * static_cast<int64_t>(at.scoreInputs.size()));
  if (held + 48 > at.consumerRegisters || held > at.launchedRegisters) return std::nullopt;

  at.launchGrid = block.grid;  // one tile per block (see WarpgroupRing::persistent)
  at.qBytes = layOutStage({&at.q}, limits.swizzleAlignment);
  at.stageBytes = layOutStage({&at.k, &at.v}, limits.swizzleAlignment);
  const int64_t stagingBytes = stagingBytesFor(plan, at, at.outputOp);
  // Consumer c's staging buffers, (warps per warpgroup) x stagingBytesPerWarp from c times
  // that, lie in Q rows only consumer c multiplies with, where its rows start at that same
  // stride: in the first box's rows c * wgmmaRows onwards where Q's contiguous dim is K,
  // else in box c. Its last wgmma on Q completes before its epilogue, and the copy of Q
  // lands once, before any, so the buffers can reuse those bytes.
  const int64_t stagingPerConsumer = at.warpsPerWarpgroup() * limits.stagingBytesPerWarp;
  const int64_t qRowsPerConsumer =
      at.q.kMajor ? limits.wgmmaRows * limits.swizzleRowBytes : at.q.boxBytes;
  const bool stagingInQ = at.q.offset == 0 && stagingPerConsumer == qRowsPerConsumer;
  // One more barrier: Q's, which completes once.
  if (!layOutRing(at, at.qBytes, 1, stagingBytes, block.forloop, target, stagingInQ)) {
    return std::nullopt;
  }
  at.overlapped = at.stages >= 3 && block.forloop >= 2;
  return at;
}

}  // namespace mugraph::plan
