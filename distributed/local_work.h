// The work queue inside one process (work_queue.h): what a single process runs, and what both
// builds share.
#pragma once

#include <atomic>

#include "distributed/work_queue.h"

namespace mugraph::distributed::detail {

// Runs the items on this process's threads (in order, one at a time, for threadsPerRank 1),
// collecting each result; stops starting items once `stop` holds.
RankShare runInThisProcess(const WorkItems& work, const std::atomic<bool>& stop);

}  // namespace mugraph::distributed::detail
