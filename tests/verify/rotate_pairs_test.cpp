// rotate_pairs(dim), interleaved RoPE's rotation (GPT-J, Cohere): y[2i] = -x[2i + 1],
// y[2i + 1] = x[2i] along dim. The interpreter against a hand computation on normal inputs, the
// verifier on true identities (a double rotation negates, the rotation is linear) and on wrong
// ones (a sign off, rotate_half in its place, another dim), and the program text round trip.
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
double elementAt(const HostTensor<double>& x, int64_t n, int64_t inner, int64_t o, int64_t j,
                 int64_t i) {
  return x.data[static_cast<size_t>((o * n + j) * inner + i)];
}

TEST(RotatePairs, InterpreterMatchesAHandComputationOnNormalInputs) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  // The last dim (RoPE's head dim) and a middle one.
  for (const auto& [dim, outer, n, inner] :
       {std::tuple<int, int64_t, int64_t, int64_t>{2, 12, 8, 1}, {1, 3, 6, 5}}) {
    const graph::Dims shape = dim == 2 ? graph::Dims{3, 4, 8} : graph::Dims{3, 6, 5};
    const graph::Program program =
        parseYProgram("input X f32 " + graph::formatDims(shape) + "\n",
                      "Y = rotate_pairs(X, dim=" + std::to_string(dim) + ")\n");
    const TensorMap<double> inputs = normalInputs(program, seed, 1.0);
    const HostTensor<double>& x = inputs.at("X");
    const HostTensor<double> y = evaluate(program, inputs).at("Y");
    ASSERT_EQ(y.shape, shape);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t pair = 0; pair < n / 2; ++pair) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t even = 2 * pair, odd = 2 * pair + 1;
          EXPECT_EQ(elementAt(y, n, inner, o, even, i), -elementAt(x, n, inner, o, odd, i))
              << "dim " << dim << " at " << o << ", " << even << ", " << i;
          EXPECT_EQ(elementAt(y, n, inner, o, odd, i), elementAt(x, n, inner, o, even, i))
              << "dim " << dim << " at " << o << ", " << odd << ", " << i;
        }
      }
    }
  }
}

const char* const kPairInputs = "input A f32 [8, 16]\ninput B f32 [8, 16]\ninput S f32 [8, 16]\n";

TEST(RotatePairs, TrueIdentitiesVerifyAtLevelFiniteField) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const std::vector<std::pair<std::string, std::string>> pairs = {
      // Rotating twice negates.
      {"Y = rotate_pairs(rotate_pairs(A, dim=1), dim=1)\n", "Y = scale(A, c=-1)\n"},
      // The rotation is linear, and commutes with scaling.
      {"Y = rotate_pairs(add(A, B), dim=1)\n",
       "Y = add(rotate_pairs(A, dim=1), rotate_pairs(B, dim=1))\n"},
      {"Y = mul(rotate_pairs(scale(A, c=3), dim=1), S)\n",
       "Y = scale(mul(rotate_pairs(A, dim=1), S), c=3)\n"}};
  for (const auto& [a, b] : pairs) {
    SCOPED_TRACE(a + b);
    const EquivalenceReport report =
        checkAtHalfScale(parseYProgram(kPairInputs, a), parseYProgram(kPairInputs, b), seed, false);
    EXPECT_TRUE(report.equivalent) << report.mismatch;
    EXPECT_EQ(report.level, VerificationLevel::FiniteField) << report.levelReason;
  }
}

TEST(RotatePairs, WrongSignsRotationsAndDimsAreRejectedByFingerprintsAlone) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const std::string rope = "Y = add(mul(A, B), mul(rotate_pairs(A, dim=1), S))\n";
  for (const std::string wrong :
       {"Y = add(mul(A, B), mul(scale(rotate_pairs(A, dim=1), c=-1), S))\n",  // sign flipped
        "Y = add(mul(A, B), mul(rotate_half(A, dim=1), S))\n",                // the other RoPE
        "Y = add(mul(A, B), mul(rotate_pairs(A, dim=0), S))\n"}) {            // another dim
    SCOPED_TRACE(wrong);
    EXPECT_FALSE(checkAtHalfScale(parseYProgram(kPairInputs, rope),
                                  parseYProgram(kPairInputs, wrong), seed, false)
                     .equivalent);
    const EquivalenceReport field = checkAtHalfScale(parseYProgram(kPairInputs, rope),
                                                     parseYProgram(kPairInputs, wrong), seed, true);
    EXPECT_EQ(field.level, VerificationLevel::FiniteField) << field.levelReason;
    EXPECT_FALSE(field.equivalent) << "fingerprints alone accepted it";
  }
}

TEST(RotatePairs, ProgramTextRoundTripsAndAnOddDimIsRefused) {
  const graph::Program program =
      parseYProgram("input X f16 [2, 16, 64]\n", "Y = rotate_pairs(X, dim=2)\n");
  const std::string text = graph::programToText(program);
  EXPECT_NE(text.find("rotate_pairs(X, dim=2)"), std::string::npos) << text;
  EXPECT_EQ(graph::programToText(graph::parseProgramText(text, "again.mg")), text);
  EXPECT_ANY_THROW(parseYProgram("input X f16 [2, 16, 63]\n", "Y = rotate_pairs(X, dim=2)\n"));
}

}  // namespace
}  // namespace mugraph::verify
