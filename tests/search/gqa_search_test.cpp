// The built-in GQA program (safe softmax, Mirage's shapes): the search finds split-KV
// (kernel 1 splits the KV sequence across the grid, kernel 2 combines by rescaling and
// divides) and at least 28 distinct schedules, each verified at real shapes with a
// false-accept bound <= 1e-12.
#include <gtest/gtest.h>

#include <set>

#include "graph/hash.h"
#include "graph/validate.h"
#include "search/builtin_programs.h"
#include "search/superoptimize.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

TEST(GqaSearch, FindsSplitKvAndAtLeast28VerifiedSchedules) {
  const graph::Program program = *builtinProgram("gqa");
  SearchOptions options = testing::quietOptions(program);
  // A narrower space than the default (two kernels, fewer trip counts) keeps the test short;
  // the default space is measured by tools/bench/search_bench.
  options.config.maxKernels = 2;
  options.config.forloopCandidates = {1, 16};
  options.config.maxGridBlocks = 256;
  options.config.maxVariants = 28;
  const SearchResult result = superoptimize(program, options);
  ASSERT_TRUE(result.summary.complete);
  ASSERT_EQ(result.variants.size(), 28u);
  std::set<uint64_t> hashes;
  bool splitKv = false;
  for (const VerifiedVariant& v : result.variants) {
    hashes.insert(graph::scheduleHash(v.schedule));
    EXPECT_EQ(v.verification.level, "finite-field") << v.name;
    EXPECT_LE(v.verification.falseAcceptBound, 1e-12) << v.name;
    EXPECT_NO_THROW(graph::validateSchedule(v.schedule)) << v.name;
    splitKv = splitKv || testing::isSplitKv(v.schedule);
  }
  EXPECT_EQ(hashes.size(), 28u);
  EXPECT_TRUE(splitKv);
  for (size_t i = 1; i < result.variants.size(); ++i) {
    EXPECT_LE(result.variants[i - 1].cost.microseconds, result.variants[i].cost.microseconds);
  }
}

}  // namespace
}  // namespace mugraph::search
