// Random inputs are reproducible, in range and fresh per seed.
#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace mugraph::verify
