// The ranking of a dynamic program's candidates over its range (search/range_cost.h): the
// lengths (one per power-of-two bucket, the range's ends) and the aggregate (geometric mean
// of the cost relative to the best candidate at each length).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "graph/program_text.h"
#include "search/enumerate_kernel_graphs.h"
#include "search/range_cost.h"

namespace mugraph::search {
namespace {

TEST(RangeCost, GeometricMeanOfTheCostRelativeToTheBestAtEachLength) {
  // a is best at the short length, b at the long one, c twice the best everywhere.
  const std::vector<double> score = geometricMeanRelativeCost({{1, 8}, {2, 4}, {2, 8}});
  EXPECT_DOUBLE_EQ(score[0], std::sqrt(1.0 * 2.0));
  EXPECT_DOUBLE_EQ(score[1], std::sqrt(2.0 * 1.0));
  EXPECT_DOUBLE_EQ(score[2], std::sqrt(2.0 * 2.0));
}

TEST(RangeCost, ALengthACandidateCannotRunAtRanksItLast) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> score = geometricMeanRelativeCost({{1, inf}, {3, 3}, {inf, inf}});
  EXPECT_TRUE(std::isinf(score[0]));
  EXPECT_DOUBLE_EQ(score[1], std::sqrt(3.0));
  EXPECT_TRUE(std::isinf(score[2]));
}

TEST(RangeCost, ALengthNoCandidateCanRunAtIsSkipped) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> score = geometricMeanRelativeCost({{2, inf}, {4, inf}});
  EXPECT_DOUBLE_EQ(score[0], 1.0);
  EXPECT_DOUBLE_EQ(score[1], 2.0);
}

TEST(RangeCost, LengthsAreTwoPerOctaveAndTheRangesEnds) {
  const graph::Program program = graph::parseProgramText(
      "program p\ndim m in [3, 40]\ninput A f16 [m, 16]\ninput B f16 [16, 16]\n"
      "C = matmul(A, B)\noutput C\n",
      "p.mg");
  std::vector<int64_t> lengths;
  for (const graph::DimValues& values : rankingLengths(program)) lengths.push_back(values.at("m"));
  EXPECT_EQ(lengths, (std::vector<int64_t>{3, 4, 6, 8, 12, 16, 24, 32, 40}));
}

TEST(RangeCost, EachBucketRunsTheVariantCheapestAtItsLengthAndNeighboursMerge) {
  // Lengths 1, 64, 512, 4096 from a min of 1: variant 1 (small tiles) wins the short lengths,
  // variant 0 (the range's first choice) the long ones.
  const std::vector<LengthBucket> buckets =
      lengthBuckets({1, 64, 512, 4096}, 1, {{30, 30, 60, 200}, {10, 12, 80, 600}}, 0.03);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].min, 1);
  EXPECT_EQ(buckets[0].max, 64);
  EXPECT_EQ(buckets[0].variant, 1);
  EXPECT_DOUBLE_EQ(buckets[0].microseconds, 12);
  EXPECT_EQ(buckets[1].min, 65);
  EXPECT_EQ(buckets[1].max, 4096);
  EXPECT_EQ(buckets[1].variant, 0);
  EXPECT_DOUBLE_EQ(buckets[1].microseconds, 200);
}

TEST(RangeCost, ASwitchWithinTheMarginKeepsTheFirstChoice) {
  // Variant 1 is 2% cheaper at 64: not worth a second variant at a 3% margin; at 1% it is.
  const std::vector<std::vector<double>> costs = {{10, 51, 100}, {10, 50, 300}};
  EXPECT_EQ(lengthBuckets({16, 64, 256}, 16, costs, 0.03).size(), 1u);
  const std::vector<LengthBucket> finer = lengthBuckets({16, 64, 256}, 16, costs, 0.01);
  ASSERT_EQ(finer.size(), 3u);
  EXPECT_EQ(finer[1].variant, 1);
  EXPECT_EQ(finer[1].min, 17);
  EXPECT_EQ(finer[1].max, 64);
}

TEST(RangeCost, AVariantWithinTheMarginOfTheFastestGoesOnFromTheBucketBefore) {
  // Variants 1 and 2 trade places by 1-2% over 1..16 (a measurement's noise) and variant 0
  // only wins at 1024: one bucket for 1..16, not four.
  const std::vector<std::vector<double>> costs = {
      {9, 9, 9, 9, 10}, {6.90, 7.02, 6.98, 7.03, 30}, {7.01, 6.91, 7.05, 6.94, 40}};
  const std::vector<LengthBucket> buckets = lengthBuckets({1, 2, 8, 16, 1024}, 1, costs, 0.03);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].variant, 1);
  EXPECT_EQ(buckets[0].max, 16);
  EXPECT_EQ(buckets[1].variant, 0);
  // A switch that saves the margin still happens.
  const std::vector<std::vector<double>> faster = {{9, 9, 9}, {6.9, 7.0, 30}, {7.0, 6.5, 40}};
  EXPECT_EQ(lengthBuckets({1, 2, 64}, 1, faster, 0.03).size(), 3u);
}

TEST(RangeCost, ALengthNoVariantCanRunAtIsAGapBetweenBuckets) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<LengthBucket> buckets =
      lengthBuckets({1, 8, 64}, 1, {{5, inf, 9}, {6, inf, 20}}, 0.03);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].max, 1);
  EXPECT_EQ(buckets[1].min, 9);  // 2..8 has no variant
  EXPECT_EQ(buckets[1].max, 64);
}

TEST(RangeCost, VerifiedFirstAreEachLengthsCheapestThenEachLengthsRunnerUp) {
  const double inf = std::numeric_limits<double>::infinity();
  // Lengths 1, 64, 4096. a wins 1 and 64, c wins 4096; b is 64's runner-up, d 1's and
  // 4096's; e cannot run at all.
  const std::vector<std::vector<double>> costs = {
      {10, 20, 900}, {30, 21, 800}, {40, 50, 100}, {11, 60, 101}, {inf, inf, inf}};
  EXPECT_EQ(cheapestAtEachLength(costs, 1), (std::vector<size_t>{0, 2}));
  EXPECT_EQ(cheapestAtEachLength(costs, 2), (std::vector<size_t>{0, 2, 3, 1}));
  EXPECT_EQ(cheapestAtEachLength(costs, 5).size(), 4u);  // never e
}

// Short lengths often have several winners within a few percent of each other: they are not
// all verified before the one long-length winner (a split-KV kernel 90x faster there), so a
// verification cut short after two variants still serves the whole range.
TEST(RangeCost, VerifiedFirstCoverTheRangeBeforeTheShortLengthsNearTies) {
  // Lengths 1, 2, 4, 8, 4096: a, b, c, d each win one short length by about 1%.
  const std::vector<std::vector<double>> costs = {{10, 20, 40, 80, 9000},
                                                  {11, 19, 41, 81, 9000},
                                                  {12, 21, 39, 82, 9000},
                                                  {13, 22, 42, 79, 9000},
                                                  {50, 50, 50, 100, 100}};
  const std::vector<size_t> order = cheapestAtEachLength(costs, 1);
  ASSERT_EQ(order.size(), 5u);
  EXPECT_EQ(order[0], 4u);  // the long length's winner loses least alone (5x at worst)
  EXPECT_EQ(order[1], 0u);  // then the best of the short lengths'
}

// The pool keeps, beyond its limit, each ranking length's two cheapest: a split-KV variant
// that wins only the longest length (worst mean) survives a pool of one.
TEST(RangeCost, ThePoolKeepsEachLengthsCheapestBeyondItsLimit) {
  const auto candidate = [](uint64_t hash, std::vector<double> costs) {
    Candidate c;
    c.hash = hash;
    c.lengthCosts = std::move(costs);
    double logs = 0;
    for (double x : c.lengthCosts) logs += std::log(x);
    c.cost = std::exp(logs / static_cast<double>(c.lengthCosts.size()));
    return c;
  };
  const std::vector<Candidate> all{candidate(1, {1, 1, 1, 90}), candidate(2, {1.1, 1.1, 1.1, 80}),
                                   candidate(3, {1.2, 1.2, 1.2, 70}), candidate(4, {9, 9, 9, 20})};
  // Every insertion order gives the same pool.
  for (const std::vector<int>& order : std::vector<std::vector<int>>{{0, 1, 2, 3}, {3, 2, 1, 0}}) {
    std::vector<Candidate> pool;
    for (int i : order) keepInPool(pool, all[static_cast<size_t>(i)], 1);
    std::set<uint64_t> kept;
    for (const Candidate& c : pool) kept.insert(c.hash);
    // 1 and 2: the cheapest at the short lengths; 4 and 3: at the longest.
    EXPECT_EQ(kept, (std::set<uint64_t>{1, 2, 3, 4}));
  }
  std::vector<Candidate> pool;
  for (const Candidate& c : all) keepInPool(pool, c, 1);
  keepInPool(pool, candidate(5, {9, 9, 9, 10}), 1);
  std::set<uint64_t> kept;
  for (const Candidate& c : pool) kept.insert(c.hash);
  EXPECT_EQ(kept, (std::set<uint64_t>{1, 2, 4, 5}));  // 3 is third everywhere now
}

}  // namespace
}  // namespace mugraph::search
