// Random inputs are reproducible, in range and fresh per seed.
#include <gtest/gtest.h>

#include <cmath>

#include "graph/error.h"
#include "graph/program_text.h"
#include "tests/verify/test_support.h"
#include "verify/interpreter.h"
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

// Attention at a given logit spread: the inputs inputStdForLogitStd asks for give logits with
// that standard deviation (measured over 32K logits), for the decode program's scale too.
TEST(RandomInputs, NormalInputsReachTheAskedLogitSpread) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const std::string body =
      "input Q f32 [8, 4, 128]\ninput K f32 [8, 128, 1024]\ninput V f32 [8, 1024, 128]\n"
      "A = scale(matmul(Q, K), c=0.08838834764831843)\nM = reduce_max(A, dim=2)\n"
      "E = exp(sub(A, M))\nS = reduce_sum(E, dim=2)\nO = matmul(div(E, S), V)\n";
  const graph::Program attention = graph::parseProgramText(body + "output O\n", "a.mg");
  const graph::Program logits = graph::parseProgramText(body + "output A\n", "l.mg");
  for (double spread : {1.0, 4.0, 16.0}) {
    const double stddev = inputStdForLogitStd(attention, spread);
    const TensorMap<double> inputs = normalInputs(attention, seed, stddev);
    double sum = 0.0, squares = 0.0;
    for (double x : inputs.at("K").data) {
      sum += x;
      squares += x * x;
    }
    const double n = static_cast<double>(inputs.at("K").data.size());
    EXPECT_NEAR(std::sqrt(squares / n - (sum / n) * (sum / n)), stddev, 0.02 * stddev);
    double logitSquares = 0.0;
    const std::vector<double> a = evaluate(logits, inputs).at("A").data;
    for (double x : a) logitSquares += x * x;
    EXPECT_NEAR(std::sqrt(logitSquares / static_cast<double>(a.size())), spread, 0.1 * spread);
  }
  EXPECT_THROW(inputStdForLogitStd(twoInputProgram(), 4.0), UserError);
}

// Scores with an added bias and a tanh soft cap between two scales (Gemma 2's): the spread is
// that of the scaled products the cap and the bias act on, as for the plain program.
TEST(RandomInputs, ABiasAndASoftCapPassTheLogitSpreadOn) {
  const std::string inputs =
      "input Q f32 [8, 4, 128]\ninput K f32 [8, 128, 1024]\ninput V f32 [8, 1024, 128]\n"
      "input B f32 [1, 4, 1024]\n";
  const std::string softmax =
      "M = reduce_max(A, dim=2)\nE = exp(sub(A, M))\n"
      "S = reduce_sum(E, dim=2)\nO = matmul(div(E, S), V)\noutput O\n";
  const graph::Program plain = graph::parseProgramText(
      inputs + "A = scale(matmul(Q, K), c=0.08838834764831843)\n" + softmax, "p.mg");
  const graph::Program capped = graph::parseProgramText(
      inputs + "A = add(scale(tanh(scale(matmul(Q, K), c=0.0017677669529663688)), c=50), B)\n" +
          softmax,
      "c.mg");
  EXPECT_NEAR(inputStdForLogitStd(capped, 8.0), inputStdForLogitStd(plain, 8.0), 1e-12);
}

}  // namespace
}  // namespace mugraph::verify
