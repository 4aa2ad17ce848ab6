// The work queue in one process (a build without MPI, or a run without mpirun): every item is
// run and collected exactly once, one thread per rank deals them in order, and a stop ends the
// dealing. Across ranks it is tested through the CLI (tests/tools/mpi_cli_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "distributed/ranks.h"
#include "distributed/work_queue.h"

namespace mugraph::distributed {
namespace {

WorkItems squares(int count, int threads, std::vector<int>& collected) {
  WorkItems work;
  for (int i = 0; i < count; ++i) work.items.push_back(i);
  work.threadsPerRank = threads;
  work.run = [](int item) { return std::any(item * item); };
  work.encode = [](const std::any& r) { return std::to_string(std::any_cast<int>(r)); };
  work.decode = [](const std::string& bytes) { return std::any(std::stoi(bytes)); };
  work.collect = [&collected](int item, std::any&& result, double) {
    EXPECT_EQ(std::any_cast<int>(result), item * item);
    collected.push_back(item);
  };
  return work;
}

TEST(WorkQueue, EveryItemIsCollectedOnceOnManyThreads) {
  std::vector<int> collected;
  const std::atomic<bool> stop{false};
  const std::vector<RankShare> shares = runOnEveryRank(squares(1000, 4, collected), stop);
  std::sort(collected.begin(), collected.end());
  ASSERT_EQ(collected.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(collected[i], i);
  ASSERT_EQ(shares.size(), static_cast<size_t>(ranks()));
  EXPECT_EQ(shares[0].items, 1000);
}

TEST(WorkQueue, OneThreadRunsTheItemsInOrderAndStopsWhenAsked) {
  std::vector<int> collected;
  std::atomic<bool> stop{false};
  WorkItems work = squares(10, 1, collected);
  const auto collect = work.collect;
  work.collect = [&](int item, std::any&& result, double seconds) {
    collect(item, std::move(result), seconds);
    if (item == 3) stop = true;
  };
  runOnEveryRank(work, stop);
  EXPECT_EQ(collected, (std::vector<int>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace mugraph::distributed
