// The work queue inside one process (work_queue.h): what a single process runs, and what both
// builds share.
#pragma once

#include <atomic>

#include "distributed/work_queue.h"

namespace mugraph::distributed::detail {

// Runs the items on this process's threads (in order, one at a time, for threadsPerRank 1),
// collecting each result; stops starting items once `stop` holds.
RankShare runInThisProcess(const WorkItems& work, const std::atomic<bool>& stop);

// While one lives, this process works as a job of its own (WorkItems::alone): rank() is 0 and
// ranks() 1. One item at a time per process, so one flag for the process.
class AloneInThisProcess {
 public:
  AloneInThisProcess();
  ~AloneInThisProcess();
  AloneInThisProcess(const AloneInThisProcess&) = delete;
  AloneInThisProcess& operator=(const AloneInThisProcess&) = delete;
};
bool aloneInThisProcess();

}  // namespace mugraph::distributed::detail
