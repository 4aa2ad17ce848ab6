// The result set does not depend on the thread count, and a search stopped part-way and
// resumed from its checkpoint ends with the same result set as an uninterrupted one.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "graph/error.h"

#include "search/checkpoint.h"
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

// A rejected candidate whose float test overflowed has an infinite error: the state that ranks
// share and checkpoints keep carries it (JSON has no infinity), where it used to end the
// search with "malformed checkpoint ... type must be number, but is null".
TEST(Checkpoint, NumbersThatAreNotFiniteRoundTrip) {
  CheckpointState state;
  state.configKey = "config";
  VerificationRecord overflowed;
  overflowed.equivalent = false;
  overflowed.level = "float-only";
  overflowed.maxRelError = std::numeric_limits<double>::infinity();
  overflowed.falseAcceptBound = std::numeric_limits<double>::quiet_NaN();
  overflowed.detail = "float test: relative error inf";
  state.verified[0x0123456789abcdefULL] = overflowed;
  VerificationRecord fine;
  fine.equivalent = true;
  fine.level = "finite-field";
  fine.maxRelError = 2.5e-4;
  fine.falseAcceptBound = 1e-18;
  state.verified[0x1111111111111111ULL] = fine;
  const CheckpointState back = parseCheckpoint(checkpointText(state), "test");
  const VerificationRecord& r = back.verified.at(0x0123456789abcdefULL);
  EXPECT_FALSE(r.equivalent);
  EXPECT_TRUE(std::isinf(r.maxRelError) && r.maxRelError > 0);
  EXPECT_TRUE(std::isnan(r.falseAcceptBound));
  EXPECT_EQ(back.verified.at(0x1111111111111111ULL).maxRelError, 2.5e-4);
  EXPECT_EQ(back.verified.at(0x1111111111111111ULL).falseAcceptBound, 1e-18);
  // Anything else that is not a number is still a clear error.
  std::string text = checkpointText(state);
  const size_t at = text.find("\"inf\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 5, "\"huge\"");
  EXPECT_THROW(parseCheckpoint(text, "test"), UserError);
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
