// rotate_half(dim), RoPE's rotation: y[j] = -x[j + h] for j < h, x[j - h] otherwise (n = 2h
// along dim). The interpreter against a hand computation on normal inputs, RoPE composed from
// it and mul/add, the verifier on true identities (a double rotation negates, the rotation is
// linear) and on wrong ones (a sign or a dim off), and the program text round trip.
#include <gtest/gtest.h>

#include <string>

#include "graph/program_text.h"
#include "verify/equivalence.h"
#include "verify/interpreter.h"
#include "verify/random_inputs.h"
#include "verify/test_support.h"

namespace mugraph::verify {
namespace {

using testing::checkAtHalfScale;
using testing::parseYProgram;

// The element of x [outer, n, inner] at (o, j, i), row-major.
double at(const HostTensor<double>& x, int64_t n, int64_t inner, int64_t o, int64_t j, int64_t i) {
  return x.data[static_cast<size_t>((o * n + j) * inner + i)];
}

TEST(RotateHalf, InterpreterMatchesAHandComputationOnNormalInputs) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  // The last dim (RoPE's head dim) and a middle one.
  for (const auto& [dim, outer, n, inner] :
       {std::tuple<int, int64_t, int64_t, int64_t>{2, 12, 8, 1}, {1, 3, 6, 5}}) {
    const graph::Dims shape = dim == 2 ? graph::Dims{3, 4, 8} : graph::Dims{3, 6, 5};
    const graph::Program program =
        parseYProgram("input X f32 " + graph::formatDims(shape) + "\n",
                      "Y = rotate_half(X, dim=" + std::to_string(dim) + ")\n");
    const TensorMap<double> inputs = normalInputs(program, seed, 1.0);
    const HostTensor<double>& x = inputs.at("X");
    const HostTensor<double> y = evaluate(program, inputs).at("Y");
    ASSERT_EQ(y.shape, shape);
    const int64_t h = n / 2;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < inner; ++i) {
          const double expected =
              j < h ? -at(x, n, inner, o, j + h, i) : at(x, n, inner, o, j - h, i);
          EXPECT_EQ(at(y, n, inner, o, j, i), expected)
              << "dim " << dim << " at " << o << ", " << j << ", " << i;
        }
      }
    }
  }
}

TEST(RotateHalf, RopeComposedFromMulAndAddMatchesAHandComputation) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const graph::Program rope =
      parseYProgram("input X f32 [4, 16, 32]\ninput C f32 [1, 16, 32]\ninput S f32 [1, 16, 32]\n",
                    "Y = add(mul(X, C), mul(rotate_half(X, dim=2), S))\n");
  const TensorMap<double> inputs = normalInputs(rope, seed, 1.0);
  const HostTensor<double>& x = inputs.at("X");
  const HostTensor<double>& c = inputs.at("C");
  const HostTensor<double>& s = inputs.at("S");
  const HostTensor<double> y = evaluate(rope, inputs).at("Y");
  for (int64_t head = 0; head < 4; ++head) {
    for (int64_t row = 0; row < 16; ++row) {
      for (int64_t j = 0; j < 32; ++j) {
        const int64_t o = head * 16 + row;
        const double rotated = j < 16 ? -at(x, 32, 1, o, j + 16, 0) : at(x, 32, 1, o, j - 16, 0);
        const double expected =
            at(x, 32, 1, o, j, 0) * at(c, 32, 1, row, j, 0) + rotated * at(s, 32, 1, row, j, 0);
        EXPECT_NEAR(at(y, 32, 1, o, j, 0), expected, 1e-12);
      }
    }
  }
}

const char* const kInputs = "input A f32 [8, 16]\ninput B f32 [8, 16]\ninput S f32 [8, 16]\n";

TEST(RotateHalf, TrueIdentitiesVerifyAtLevelFiniteField) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const std::vector<std::pair<std::string, std::string>> pairs = {
      // Rotating twice negates.
      {"Y = rotate_half(rotate_half(A, dim=1), dim=1)\n", "Y = scale(A, c=-1)\n"},
      // The rotation is linear, and commutes with scaling.
      {"Y = rotate_half(add(A, B), dim=1)\n",
       "Y = add(rotate_half(A, dim=1), rotate_half(B, dim=1))\n"},
      {"Y = mul(rotate_half(scale(A, c=3), dim=1), S)\n",
       "Y = scale(mul(rotate_half(A, dim=1), S), c=3)\n"}};
  for (const auto& [a, b] : pairs) {
    SCOPED_TRACE(a + b);
    const EquivalenceReport report =
        checkAtHalfScale(parseYProgram(kInputs, a), parseYProgram(kInputs, b), seed, false);
    EXPECT_TRUE(report.equivalent) << report.mismatch;
    EXPECT_EQ(report.level, VerificationLevel::FiniteField) << report.levelReason;
  }
}

TEST(RotateHalf, WrongSignsAndDimsAreRejectedByFingerprintsAlone) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const std::string rope = "Y = add(mul(A, B), mul(rotate_half(A, dim=1), S))\n";
  for (const std::string wrong :
       {"Y = add(mul(A, B), mul(scale(rotate_half(A, dim=1), c=-1), S))\n",  // sign flipped
        "Y = add(mul(A, B), mul(A, S))\n",                                   // no rotation
        "Y = add(mul(A, B), mul(rotate_half(A, dim=0), S))\n",               // another dim
        "Y = add(mul(A, B), mul(rotate_half(rotate_half(A, dim=1), dim=1), S))\n"}) {
    SCOPED_TRACE(wrong);
    EXPECT_FALSE(
        checkAtHalfScale(parseYProgram(kInputs, rope), parseYProgram(kInputs, wrong), seed, false)
            .equivalent);
    const EquivalenceReport field =
        checkAtHalfScale(parseYProgram(kInputs, rope), parseYProgram(kInputs, wrong), seed, true);
    EXPECT_EQ(field.level, VerificationLevel::FiniteField) << field.levelReason;
    EXPECT_FALSE(field.equivalent) << "fingerprints alone accepted it";
  }
}

TEST(RotateHalf, ProgramTextRoundTripsAndAnOddDimIsRefused) {
  const graph::Program program =
      parseYProgram("input X f16 [2, 16, 64]\n", "Y = rotate_half(X, dim=2)\n");
  const std::string text = graph::programToText(program);
  EXPECT_NE(text.find("rotate_half(X, dim=2)"), std::string::npos) << text;
  EXPECT_EQ(graph::programToText(graph::parseProgramText(text, "again.mg")), text);
  EXPECT_ANY_THROW(parseYProgram("input X f16 [2, 16, 63]\n", "Y = rotate_half(X, dim=2)\n"));
}

}  // namespace
}  // namespace mugraph::verify
