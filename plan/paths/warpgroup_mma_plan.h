// The sm_90 warpgroup GEMM path: a block graph that is one matmul of two per-iteration 16-bit
// input tiles, accumulated over the for-loop, then optionally an epilogue of element-wise ops,
// and stored, runs `wgmma.mma_async` from the swizzled boxes of the ring (warpgroup_ring.h).
// Consumer warpgroup c owns rows [c * m / consumers, (c + 1) * m / consumers) of the block's
// m x n result, `mTiles` wgmma instructions of limits.wgmmaRows rows each per 16 of K, n
// columns each. The epilogue runs on the accumulators in registers: a bias, an activation, a
// residual or a gate costs no kernel of its own and no round trip of the result.
#pragma once

#include <optional>
#include <vector>

#include "plan/paths/warpgroup_ring.h"

namespace mugraph::plan {

struct WarpgroupMmaPlan : WarpgroupRing {
  int64_t m = 0, n = 0, k = 0;  // block tile m x n, k per iteration
  int mTiles = 1;
  graph::DType dtype = graph::DType::F16;
  BulkOperand a, b;
  int matmulOp = -1, accumulatorOp = -1, outputOp = -1;
  // The epilogue (isGemmEpilogueOp), in block order: each op's operands are the accumulator,
  // an earlier epilogue op or an epilogue input, a tile loaded once per result tile (not per
  // iteration) at the result's rows and columns, or broadcast along a dim of extent 1.
  std::vector<int> epilogueOps;
  std::vector<int> epilogueInputs;
  // Persistent (WarpgroupRing) with a copy warpgroup and more tiles than multiprocessors,
  // walking its tiles in groups of `rasterGroup` consecutive tiles along grid x (rows of A
  // stay in L2 while the group sweeps y).
  int rasterGroup = 1;
  int accumulatorsPerThread() const { return mTiles * static_cast<int>(n) / 2; }
};

// The ops an epilogue may hold: element-wise ones of the accumulator's coordinates alone
// (a causal mask needs the loop's positions).
bool isGemmEpilogueOp(graph::OpKind kind);

// The plan of `plan`'s block graph on the warpgroup GEMM path, or nothing where it does not
// qualify: a target without warpgroup MMA; a block graph that is not exactly two
// per-iteration 16-bit input tiles, their matmul, its accum_sum, epilogue ops on it (and the
// inputs only they read, whose tiles are the result tile's or broadcast along it) and one
// output of the accumulator or of the epilogue's last op, of the result tile's shape;
// tiles whose contiguous extents are not whole boxes, box rows over the copy engine's limit,
// a result wider than 256 columns or not whole wgmma rows per consumer warpgroup; a thread
// count that is not whole warpgroups; more accumulators per thread than fit in registers, or
// fewer than two stages in shared memory. `plan` needs its graph facts only.
std::optional<WarpgroupMmaPlan> planWarpgroupMma(const KernelPlan& plan, const Target& target);

}  // namespace mugraph::plan
