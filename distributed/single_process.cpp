// A build without MPI: every process is a single rank.
#include <cstdlib>
#include <iostream>
#include <string>

#include "distributed/local_work.h"
#include "distributed/ranks.h"
#include "distributed/work_queue.h"

namespace mugraph::distributed {

// Started by mpirun as several processes, each would run the whole command alone and write
// the same files: refused, on every process, with one message.
Session::Session(int&, char**&) {
  for (const auto& [sizeName, rankName] :
       {std::pair{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
        std::pair{"PMI_SIZE", "PMI_RANK"}}) {
    const char* size = std::getenv(sizeName);
    if (size == nullptr || std::atoi(size) <= 1) continue;
    const char* rank = std::getenv(rankName);
    if (rank == nullptr || std::string(rank) == "0") {
      std::cerr
          << "mugraph: error: this build has no MPI (CMake found none, or -DMUGRAPH_MPI=OFF), "
             "so under mpirun every process would run the whole command alone; rebuild "
             "with libopenmpi-dev installed, or run without mpirun\n";
    }
    std::exit(2);
  }
}
Session::~Session() = default;
int rank() {
  return 0;
}
int ranks() {
  return 1;
}
int rankInJob() {
  return 0;
}
void abortAll(int) {}
std::string broadcast(const std::string& text) {
  return text;
}
std::vector<std::string> gather(const std::string& text) {
  return {text};
}

std::vector<RankShare> runOnEveryRank(const WorkItems& work, const std::atomic<bool>& stop) {
  return {detail::runInThisProcess(work, stop)};
}

}  // namespace mugraph::distributed
