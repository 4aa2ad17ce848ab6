#include "distributed/local_work.h"

#include <tbb/parallel_for.h>

#include <chrono>
#include <mutex>

namespace mugraph::distributed::detail {
namespace {

std::atomic<int> gAloneDepth{0};

}  // namespace

AloneInThisProcess::AloneInThisProcess() {
  ++gAloneDepth;
}
AloneInThisProcess::~AloneInThisProcess() {
  --gAloneDepth;
}
bool aloneInThisProcess() {
  return gAloneDepth.load() > 0;
}

RankShare runInThisProcess(const WorkItems& work, const std::atomic<bool>& stop) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::mutex mutex;  // guards collect and the share
  RankShare share;
  share.threads = work.threadsPerRank;
  const auto runOne = [&](int item) {
    const Clock::time_point begun = Clock::now();
    std::any result = work.run(item);
    const double seconds = std::chrono::duration<double>(Clock::now() - begun).count();
    std::lock_guard lock(mutex);
    work.collect(item, std::move(result), seconds);
    ++share.items;
    share.busySeconds += seconds;
    share.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  };
  if (work.threadsPerRank <= 1) {
    for (int item : work.items) {
      if (stop.load()) break;
      runOne(item);
    }
  } else {
    tbb::parallel_for(size_t{0}, work.items.size(), [&](size_t i) {
      if (!stop.load()) runOne(work.items[i]);
    });
  }
  return share;
}

}  // namespace mugraph::distributed::detail
