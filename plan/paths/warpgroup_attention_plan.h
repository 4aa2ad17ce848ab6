// Attention on the sm_90 warpgroup path: a query tile Q loaded once, key and value tiles K
// and V per iteration through the ring (warpgroup_ring.h), S = matmul(Q, K) in wgmma
// accumulators, a chain of element-wise ops, last-dim reductions, running maxima and rescaled
// sums on S and its row vectors (the online softmax) computed in registers, then
// O += matmul(P, V) with P (an S-shaped tile of the chain) fed to wgmma from registers and O
// kept in registers across the loop (rescaled in place by its running max's factor), and
// element-wise ops on O and row vectors after the loop. Warpgroup 0 issues the bulk copies;
// each of `consumers` warpgroups owns limits.wgmmaRows query rows. `roles` says, per tile,
// where its value lives. Q's mbarrier follows the ring's. A 16-bit result leaves through
// staging buffers in Q's first bytes, where each warp's lies in Q rows of its own warpgroup.
#pragma once

#include <optional>
#include <vector>

#include "plan/paths/warpgroup_ring.h"

namespace mugraph::plan {

enum class FragmentRole {
  None,
  S,    // [rows, kv] in the first matmul's accumulator layout
  Row,  // [rows, 1]: two values per thread (rows lane/4 and lane/4 + 8 of its warp)
  O,    // [rows, d] in the second matmul's accumulator layout
};

struct WarpgroupAttentionPlan : WarpgroupRing {
  int64_t rows = 0;  // query rows of the block: limits.wgmmaRows per consumer warpgroup
  int64_t kv = 0;    // key positions per iteration (N of the first matmul)
  int64_t d = 0;     // Q's and K's head dim: K of the first matmul
  int64_t dv = 0;    // V's head dim: N of the second matmul, O's width
  graph::DType dtype = graph::DType::F16;
  BulkOperand q, k, v;  // q.offset in shared memory, k's and v's within a stage
  int firstMatmulOp = -1, secondMatmulOp = -1, outputOp = -1;
  std::vector<FragmentRole> roles;  // per tile
  // Input ops the chain reads in S's layout (an added bias or mask, [rows or 1, kv or 1] per
  // block): each thread loads its own fragment's elements from global memory at the top of
  // every iteration, as the GEMM epilogue reads its inputs (plan::InputCopy), zero past the
  // real rows and keys.
  std::vector<int> scoreInputs;
  int64_t qBytes = 0;  // Q's boxes, before the stages
  // The loop is software-pipelined: iteration i issues S = Q·K of its own tile and then
  // O += P·V of tile i - 1, and computes its softmax while that second multiply runs; O is
  // rescaled once it has landed, and the last tile's P·V follows the loop. A consumer then
  // holds two stages at once, so this needs three (with two the copy of the next tile waits
  // for the previous one's P·V every iteration).
  bool overlapped = false;
};

// The plan of `plan`'s block graph as attention on the warpgroup path, or nothing where it
// does not qualify: besides the target, the block graph must be exactly the shape described
// above, with 16-bit Q, K and V, a key tile of 64 or 128 positions, a head dim d of whole
// wgmma steps and a V head dim dv that is a wgmma width (kWgmmaWidths), whose
// accumulators fit the consumers' registers, limits.wgmmaRows query rows per consumer
// warpgroup and a copy warpgroup (threads = limits.threads x (consumers + 1)). Head dims that
// are no whole number of boxes (96) are copied in padded boxes whose extra columns no multiply
// reads. Any other input is S-shaped ([rows or 1, kv or 1] in the block: scoreInputs) and read
// by the chain on S only. `plan` needs its graph facts (phases, producers, consumers) only.
std::optional<WarpgroupAttentionPlan> planWarpgroupAttention(const KernelPlan& plan,
                                                             const Target& target);

}  // namespace mugraph::plan
