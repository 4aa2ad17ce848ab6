// A build with MPI (Open MPI): the ranks of the job mpirun or srun started, or a single rank
// when the process was started otherwise.
#include <mpi.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "distributed/local_work.h"
#include "distributed/ranks.h"

namespace mugraph::distributed {
namespace {

int gRank = 0;
int gRanks = 1;
bool gJoined = false;

// What the launcher sets in every process it starts (Open MPI's mpirun, PMIx and PMI-2 under
// Slurm's srun). Without one, MPI_Init would start a singleton job: slower, and pointless.
bool startedByMpiLauncher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

// mpirun ends the whole job with SIGTERM when any rank dies (Open MPI's default error
// handling); rank 0 says what that means for the user before it goes.
void onTerminate(int) {
  static const char kMessage[] =
      "mugraph: rank 0 was stopped by the MPI launcher, most likely because another rank died "
      "(see mpirun's message). What finished is kept: a search's subtrees in its --checkpoint "
      "file, if one was given, and a model's subgraphs or a dataset's programs under --out. "
      "Rerun with --resume (and --checkpoint FILE for a search) to continue without losing "
      "them.\n";
  const ssize_t ignored = write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  (void)ignored;
  _exit(128 + SIGTERM);
}

}  // namespace

Session::Session(int& argc, char**& argv) {
  if (!startedByMpiLauncher()) return;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  gJoined = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &gRank);
  MPI_Comm_size(MPI_COMM_WORLD, &gRanks);
  // Every rank's threads ask rank 0 for work at once (work_queue.h).
  if (provided < MPI_THREAD_MULTIPLE) {
    if (gRank == 0) {
      std::cerr << "mugraph: error: this MPI library does not support MPI_THREAD_MULTIPLE; "
                   "use Open MPI 4 or later (Debian's openmpi-bin)\n";
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (gRank == 0 && gRanks > 1) std::signal(SIGTERM, onTerminate);
}

Session::~Session() {
  if (gJoined) MPI_Finalize();
}

int rank() {
  return detail::aloneInThisProcess() ? 0 : gRank;
}
int ranks() {
  return detail::aloneInThisProcess() ? 1 : gRanks;
}
int rankInJob() {
  return gRank;
}

// Ends the whole job, also from inside an item dealt out whole: the other ranks wait on this one.
void abortAll(int exitCode) {
  if (gRanks > 1) MPI_Abort(MPI_COMM_WORLD, exitCode);
}

std::string broadcast(const std::string& text) {
  if (ranks() == 1) return text;
  unsigned long long size = text.size();
  MPI_Bcast(&size, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  std::string received = gRank == 0 ? text : std::string(size, '\0');
  MPI_Bcast(received.data(), static_cast<int>(size), MPI_BYTE, 0, MPI_COMM_WORLD);
  return received;
}

std::vector<std::string> gather(const std::string& text) {
  if (ranks() == 1) return {text};
  int size = static_cast<int>(text.size());
  std::vector<int> sizes(gRank == 0 ? gRanks : 0);
  MPI_Gather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(sizes.size(), 0);
  int total = 0;
  for (size_t r = 0; r < sizes.size(); ++r) {
    offsets[r] = total;
    total += sizes[r];
  }
  std::string all(total, '\0');
  MPI_Gatherv(text.data(), size, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> texts;
  for (size_t r = 0; r < sizes.size(); ++r) texts.push_back(all.substr(offsets[r], sizes[r]));
  return texts;
}

}  // namespace mugraph::distributed
