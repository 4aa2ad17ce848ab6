// Shared-memory offsets for one planned block graph. Every shared tile is live over an
// interval of program points (the loop body, the end of the loop, the epilogue, the output
// stores); tiles whose intervals do not overlap share bytes. Tiles read across iterations
// (accumulators, prefetched or loop-invariant inputs) live through the whole loop. A running
// tile computed in the loop (an op on accum_max tiles) is recomputed every iteration, so it
// lives from its op to its last read, past the loop's end when read after it: the last
// iteration's value is the one read there. A rescale factor lives within one iteration, from
// the update of its max to the last rescaled sum reading it.
#pragma once

#include "plan/kernel_plan.h"

namespace mugraph::plan {

inline constexpr int64_t kSharedTileAlignment = 128;

// Fills plan.shared[*].offset, plan.materialized[*]->offset, plan.rescaleFactors[*]->offset,
// plan.rmsScratch and plan.sharedBytes.
void allocateSharedMemory(KernelPlan& plan);

}  // namespace mugraph::plan
