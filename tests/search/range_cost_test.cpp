// The ranking of a dynamic program's candidates over its range (search/range_cost.h): the
// lengths (one per power-of-two bucket, the range's ends) and the aggregate (geometric mean
// of the cost relative to the best candidate at each length).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "graph/program_text.h"
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

TEST(RangeCost, LengthsArePowerOfTwoBucketsAndTheRangesEnds) {
  const graph::Program program = graph::parseProgramText(
      "program p\ndim m in [3, 40]\ninput A f16 [m, 16]\ninput B f16 [16, 16]\n"
      "C = matmul(A, B)\noutput C\n",
      "p.mg");
  std::vector<int64_t> lengths;
  for (const graph::DimValues& values : rankingLengths(program)) lengths.push_back(values.at("m"));
  EXPECT_EQ(lengths, (std::vector<int64_t>{3, 4, 8, 16, 32, 40}));
}

}  // namespace
}  // namespace mugraph::search
