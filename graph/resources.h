// Static resource estimates of a block graph, used by `mugraph show` and by the search's
// shared-memory pruning until code generation reports exact numbers from ptxas.
#pragma once

#include <cstdint>

#include "graph/ir.h"

namespace mugraph::graph {

// Shared memory one block needs: every tile except those fused into a register epilogue.
// Input tiles count twice when forloop > 1 (double buffering); matmul results, reductions
// and accumulators are held in f32.
int64_t sharedMemoryBytes(const BlockGraph& block);

int64_t gridBlocks(const BlockGraph& block);

}  // namespace mugraph::graph
