// The processes of one run. Launched by mpirun (or Slurm's srun) from a build with MPI, one
// per MPI rank; otherwise the one process, rank 0 of 1. Rank 0 deals out the work
// (work_queue.h), gathers the results and alone writes outputs; every rank computes the same
// final result from what rank 0 broadcasts, so code after a collective step takes the same
// branches everywhere.
#pragma once

#include <string>
#include <vector>

namespace mugraph::distributed {

// Joins the MPI job when the process was started by an MPI launcher, and leaves it on
// destruction. A process started otherwise (or a build without MPI) is a single rank and never
// initializes MPI, so plain runs pay nothing for it. Create one, in main, before any other
// call here.
class Session {
 public:
  Session(int& argc, char**& argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

int rank();   // 0 in a single process
int ranks();  // 1 in a single process
inline bool isRoot() {
  return rank() == 0;
}

// After an error on one rank the others would wait for it forever: ends every rank of the job
// with `exitCode`. Does nothing in a single process.
void abortAll(int exitCode);

// Collective: rank 0's `text` on every rank.
std::string broadcast(const std::string& text);
// Collective: every rank's `text`, in rank order, on rank 0; empty on the other ranks.
std::vector<std::string> gather(const std::string& text);

}  // namespace mugraph::distributed
