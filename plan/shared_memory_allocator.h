// Shared-memory offsets for one planned block graph. Every shared tile is live over an
// interval of program points (the loop body, the end of the loop, the epilogue, the output
// stores); tiles whose intervals do not overlap share bytes. Tiles read across iterations
// (accumulators, prefetched or loop-invariant inputs) live through the whole loop. A running
// tile computed in the loop (an op on accum_max tiles) is recomputed every iteration, so it
// lives from its op to its last read, past the loop's end when read after it: the last
// iteration's value is the one read there. A rescale factor lives within one iteration, from
// the update of its max to the last rescaled sum reading it.
//
// The warpgroup paths keep every region for the kernel's whole life (the ring's stages, its
// barriers, the staging buffers): they lay regions end to end with SharedRegions. Either
// way, this file is where offsets, bytes and alignment are decided.
#pragma once

#include "plan/kernel_plan.h"

namespace mugraph::plan {

inline constexpr int64_t kSharedTileAlignment = 128;

int64_t alignUp(int64_t value, int64_t alignment);

// Fills general.shared[*].offset, general.materialized[*]->offset,
// general.rescaleFactors[*]->offset, general.rmsScratch and plan.sharedBytes, for `plan`
// planned on the general path as `general`.
void allocateSharedMemory(KernelPlan& plan, GeneralPlan& general);

// Regions that live as long as the kernel, each at the first offset past the previous one
// that its alignment allows.
class SharedRegions {
 public:
  int64_t place(int64_t bytes, int64_t alignment);  // the region's offset
  int64_t end() const { return end_; }

 private:
  int64_t end_ = 0;
};

}  // namespace mugraph::plan
