// How whole jobs go over the ranks (work_queue.h: chooseSpread, runItems), and which GPU a rank
// takes (ranks.h): what the builds with and without MPI share.
#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include "distributed/ranks.h"
#include "distributed/work_queue.h"

namespace mugraph::distributed {

Spread chooseSpread(const std::string& flag, size_t itemCount, int rankCount) {
  if (flag == "items") return Spread::kWholeItems;
  if (flag == "searches") return Spread::kEachSearch;
  if (flag != "auto") {
    throw std::invalid_argument("'" + flag + "' is none of auto, items, searches");
  }
  return itemCount >= static_cast<size_t>(rankCount) ? Spread::kWholeItems : Spread::kEachSearch;
}

const char* spreadName(Spread spread) {
  return spread == Spread::kWholeItems ? "items" : "searches";
}

std::vector<RankShare> runItems(WorkItems work, Spread spread) {
  const std::atomic<bool> never{false};
  if (spread == Spread::kWholeItems) {
    work.alone = true;
    work.threadsPerRank = 1;
    return runOnEveryRank(work, never);
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  RankShare share;
  share.threads = 1;
  for (int item : work.items) {
    const Clock::time_point begun = Clock::now();
    std::any result = work.run(item);
    const double seconds = std::chrono::duration<double>(Clock::now() - begun).count();
    if (isRoot()) work.collect(item, std::move(result), seconds);
    ++share.items;
    share.busySeconds += seconds;
    share.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return {share};
}

int localRank(const std::function<const char*(const char*)>& environment, int jobRank) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"}) {
    const char* value = environment(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const long parsed = std::strtol(value, &end, 10);
    if (*end == '\0' && parsed >= 0) return static_cast<int>(parsed);
  }
  return jobRank;
}

int deviceForRank(int localRankOnHost, int deviceCount) {
  if (deviceCount <= 0) throw std::invalid_argument("no GPU to choose from");
  return localRankOnHost % deviceCount;
}

bool hasGpuOfItsOwn(int localRankOnHost, int deviceCount) {
  return localRankOnHost >= 0 && localRankOnHost < deviceCount;
}

}  // namespace mugraph::distributed
