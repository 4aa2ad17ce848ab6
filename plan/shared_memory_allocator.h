// Shared-memory offsets for one planned block graph. Every shared tile is live over an
// interval of program points (the loop body, the end of the loop, the epilogue, the output
// stores); tiles whose intervals do not overlap share bytes. Tiles read across iterations
// (accumulators, prefetched or loop-invariant inputs) live through the whole loop.
#pragma once

#include "plan/kernel_plan.h"

namespace mugraph::plan {

inline constexpr int64_t kSharedTileAlignment = 128;

// Fills plan.shared[*].offset, plan.materialized[*]->offset, plan.rmsScratch and
// plan.sharedBytes.
void allocateSharedMemory(KernelPlan& plan);

}  // namespace mugraph::plan
