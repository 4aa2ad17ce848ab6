// The thread-owned path: a block graph of element-wise ops and accumulators whose tiles all
// broadcast to one extent runs without shared memory or barriers. Thread t owns elements t,
// t + threads, ... of that extent (`perThread` of them) and computes every tile's value at
// them in registers, tiles of size 1 along a dim redundantly in each thread, reading inputs
// straight from global memory and writing outputs from registers. A combine that walks
// split partials becomes a loop of a few register operations per partial instead of a
// barrier-separated op sequence.
#pragma once

#include <optional>

#include "plan/tiles.h"

namespace mugraph::plan {

struct KernelPlan;

struct ThreadOwnedPlan {
  Extent4 extent{1, 1, 1, 1};
  int64_t elements = 1;
  int perThread = 1;
};

// The plan when every compute op of `plan`'s block graph is element-wise or an accumulator,
// every tile's extent is, dim by dim, the common extent or 1, and each thread owns few
// enough elements to keep them in registers; else nothing. `plan` needs its graph facts.
std::optional<ThreadOwnedPlan> planThreadOwned(const KernelPlan& plan);

}  // namespace mugraph::plan
