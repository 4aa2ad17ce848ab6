// The processes of one run. Launched by mpirun (or Slurm's srun) from a build with MPI, one
// per MPI rank; otherwise the one process, rank 0 of 1. Rank 0 deals out the work
// (work_queue.h), gathers the results and alone writes outputs; every rank computes the same
// final result from what rank 0 broadcasts, so code after a collective step takes the same
// branches everywhere.
#pragma once

#include <functional>
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

// The process's place in the job: 0 of 1 in a single process, and inside an item dealt out
// whole (work_queue.h, WorkItems::alone), where this process works as a job of its own.
int rank();
int ranks();
inline bool isRoot() {
  return rank() == 0;
}
// The rank in the whole job, even inside an item dealt out whole: for messages and records.
int rankInJob();

// The rank among the job's processes on this host, as the launcher sets it
// (OMPI_COMM_WORLD_LOCAL_RANK, Slurm's SLURM_LOCALID, MPICH's MPI_LOCALRANKID), or the rank in
// the job where none is set. `environment` reads a variable (std::getenv in the product).
int localRank(const std::function<const char*(const char*)>& environment, int jobRank);
// The GPU a rank profiles on: ranks on one host take its devices in turn.
int deviceForRank(int localRankOnHost, int deviceCount);
// Whether that GPU is the rank's alone (no lower rank on the host takes it): the ranks that
// time variants of one search, so that no two timings share a device.
bool hasGpuOfItsOwn(int localRankOnHost, int deviceCount);

// After an error on one rank the others would wait for it forever: ends every rank of the job
// with `exitCode`. Does nothing in a single process.
void abortAll(int exitCode);

// Collective: rank 0's `text` on every rank.
std::string broadcast(const std::string& text);
// Collective: every rank's `text`, in rank order, on rank 0; empty on the other ranks.
std::vector<std::string> gather(const std::string& text);

}  // namespace mugraph::distributed
