// The sm_90 warpgroup path of one block graph (kernel_plan.h, WarpgroupMmaPlan): whether a
// block graph qualifies, and its tiles, stages, warpgroup roles and tensor maps.
#pragma once

#include <optional>

#include "plan/kernel_plan.h"

namespace mugraph::plan {

// The plan of `plan`'s block graph on the warpgroup path, or nothing where it does not
// qualify: a target without warpgroup MMA; a block graph that is not exactly two
// per-iteration 16-bit input tiles, their matmul, its accum_sum and the output of that sum;
// tiles whose contiguous extents are not multiples of 64 elements, box rows over 256, a
// result wider than 256 columns or not a multiple of 64 rows per consumer warpgroup; a
// thread count that is not whole warpgroups; more accumulators per thread than fit in
// registers, or fewer than two stages in shared memory. `plan` needs its graph facts only.
std::optional<WarpgroupMmaPlan> planWarpgroupMma(const KernelPlan& plan, const Target& target);

// The plan of `plan`'s block graph as attention on the warpgroup path
// (WarpgroupAttentionPlan), or nothing where it does not qualify: besides the target, the
// block graph must be exactly the shape described there, with 16-bit Q, K and V whose
// contiguous extents are multiples of 64, a key tile of 64 or 128 positions, a head dim of
// 64 or 128, 64 query rows per consumer warpgroup and a copy warpgroup (threads = 128 x
// (consumers + 1)). `plan` needs its graph facts (phases, producers, consumers) only.
std::optional<WarpgroupAttentionPlan> planWarpgroupAttention(const KernelPlan& plan,
                                                             const Target& target);

}  // namespace mugraph::plan
