// Random inputs are reproducible, in range and fresh per seed; the normwise relative error
// matches outputs by name and treats NaN or infinity as a failure.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "graph/error.h"
#include "tests/verify/test_support.h"
#include "verify/random_inputs.h"

namespace mugraph::verify {
namespace {

graph::Program twoInputProgram() {
  return testing::oneOpProgram(graph::OpKind::Add, {{3, 4}, {1, 4}});
}

TEST(RandomInputs, ReproducibleInRangeAndFreshPerSeed) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const graph::Program program = twoInputProgram();
  const TensorMap<double> first = randomInputs(program, seed, 0.5);
  EXPECT_EQ(first.at("a").data, randomInputs(program, seed, 0.5).at("a").data);
  EXPECT_EQ(first.at("b").data, randomInputs(program, seed, 0.5).at("b").data);
  EXPECT_NE(first.at("a").data, randomInputs(program, seed + 1, 0.5).at("a").data);
  EXPECT_EQ(first.at("a").shape, (graph::Dims{3, 4}));
  ASSERT_EQ(first.at("b").data.size(), 4u);
  double largest = 0.0;
  for (const auto& [name, tensor] : first) {
    for (double v : tensor.data) {
      EXPECT_LE(std::abs(v), 0.5);
      largest = std::max(largest, std::abs(v));
    }
  }
  EXPECT_GT(largest, 0.05);
}

// Inputs are drawn in program input order: the first input's values do not depend on later ones.
TEST(RandomInputs, FillsInputsInProgramOrder) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const TensorMap<double> both = randomInputs(twoInputProgram(), seed);
  const TensorMap<double> alone =
      randomInputs(testing::oneOpProgram(graph::OpKind::Exp, {{3, 4}}), seed);
  EXPECT_EQ(both.at("a").data, alone.at("a").data);
}

TensorMap<double> single(std::vector<double> values) {
  return {{"out", {{static_cast<int64_t>(values.size())}, std::move(values)}}};
}

TEST(MaxRelativeError, NormwiseOverTheReferenceMaximum) {
  EXPECT_DOUBLE_EQ(maxRelativeError(single({1, -4, 2}), single({1.5, -4, 2})), 0.125);
  EXPECT_EQ(maxRelativeError(single({1, -4, 2}), single({1, -4, 2})), 0.0);
  TensorMap<double> reference = single({1, 2});
  TensorMap<double> candidate = single({1, 2});
  reference["other"] = {{2}, {10, 10}};
  candidate["other"] = {{2}, {10, 13}};
  EXPECT_DOUBLE_EQ(maxRelativeError(reference, candidate), 0.3);
}

TEST(MaxRelativeError, NonFiniteValuesAreFailures) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(maxRelativeError(single({1, 2}), single({1, nan})), inf);
  EXPECT_EQ(maxRelativeError(single({nan, 2}), single({1, 2})), inf);
  EXPECT_EQ(maxRelativeError(single({inf, 2}), single({inf, 2})), inf);
  EXPECT_EQ(maxRelativeError(single({0, 0}), single({0, 1e-300})), inf);
}

TEST(MaxRelativeError, MismatchedOutputsAreUserErrors) {
  TensorMap<double> renamed = single({1, 2});
  renamed["other"] = renamed.at("out");
  renamed.erase("out");
  EXPECT_THROW(maxRelativeError(single({1, 2}), renamed), UserError);
  TensorMap<double> extra = single({1, 2});
  extra["other"] = {{1}, {1}};
  EXPECT_THROW(maxRelativeError(single({1, 2}), extra), UserError);
  EXPECT_THROW(maxRelativeError(single({1, 2}), single({1, 2, 3})), UserError);
}

}  // namespace
}  // namespace mugraph::verify
