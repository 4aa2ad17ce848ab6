// The result set does not depend on the thread count, and a search stopped part-way and
// resumed from its checkpoint ends with the same result set as an uninterrupted one.
#include <gtest/gtest.h>

#include <filesystem>

#include "graph/error.h"

#include "search/superoptimize.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

SearchOptions smallOptions(const graph::Program& program) {
  SearchOptions options = testing::quietOptions(program);
  options.config.maxKernels = 3;
  options.config.maxVariants = 6;
  return options;
}

TEST(Determinism, OneAndTwoThreadsGiveTheSameSet) {
  const graph::Program program = testing::smallGqa();
  SearchOptions options = smallOptions(program);
  options.threads = 1;
  const SearchResult one = superoptimize(program, options);
  options.threads = 2;
  const SearchResult two = superoptimize(program, options);
  ASSERT_FALSE(one.variants.empty());
  EXPECT_EQ(testing::variantNames(one), testing::variantNames(two));
  EXPECT_EQ(one.summary.candidates, two.summary.candidates);
  EXPECT_EQ(one.summary.stats.states, two.summary.stats.states);
  EXPECT_EQ(one.summary.stats.pruned, two.summary.stats.pruned);
}

TEST(Resume, StoppedAndResumedEqualsUninterrupted) {
  const graph::Program program = testing::smallGqa();
  const std::string checkpoint =
      (std::filesystem::temp_directory_path() / "mugraph_resume_test.json").string();
  std::filesystem::remove(checkpoint);

  SearchOptions options = smallOptions(program);
  options.threads = 2;
  const SearchResult uninterrupted = superoptimize(program, options);

  SearchOptions stopped = options;
  stopped.checkpointPath = checkpoint;
  stopped.shouldStop = [](int finished) { return finished >= 3; };
  const SearchResult partial = superoptimize(program, stopped);
  EXPECT_FALSE(partial.summary.complete);
  EXPECT_LT(partial.summary.subtreesCompleted, partial.summary.subtrees);

  SearchOptions resumed = options;
  resumed.checkpointPath = checkpoint;
  resumed.resume = true;
  const SearchResult finished = superoptimize(program, resumed);
  EXPECT_TRUE(finished.summary.complete);
  EXPECT_EQ(testing::variantNames(finished), testing::variantNames(uninterrupted));
  EXPECT_EQ(finished.summary.candidates, uninterrupted.summary.candidates);
  EXPECT_EQ(finished.summary.stats.states, uninterrupted.summary.stats.states);
  std::filesystem::remove(checkpoint);
}

TEST(Resume, RejectsACheckpointOfAnotherSearchSpace) {
  const graph::Program program = testing::smallGqa();
  const std::string checkpoint =
      (std::filesystem::temp_directory_path() / "mugraph_resume_other.json").string();
  SearchOptions options = smallOptions(program);
  options.checkpointPath = checkpoint;
  options.shouldStop = [](int finished) { return finished >= 1; };
  superoptimize(program, options);
  options.shouldStop = nullptr;
  options.resume = true;
  options.config.maxKernels = 2;
  EXPECT_THROW(superoptimize(program, options), UserError);
  std::filesystem::remove(checkpoint);
}

}  // namespace
}  // namespace mugraph::search
