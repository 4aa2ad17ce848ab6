// The verifier on the two ops the ONNX importer maps Sigmoid and RMSNorm's epsilon onto:
// add_scalar adds its constant exactly in the finite field, so an RMSNorm with epsilon
// rearranged (the mean taken before or after the sum, the epsilon folded in before the 1/n)
// verifies at level finite-field, while a wrong epsilon, a missing one or one added after the
// root is rejected by fingerprints alone. sigmoid is a random function of its own, so
// x·sigmoid(x) is rejected against silu(x) although the real functions agree.
#include <gtest/gtest.h>

#include <string>

#include "graph/program_text.h"
#include "verify/equivalence.h"
#include "verify/test_support.h"

namespace mugraph::verify {
namespace {

using testing::checkAtHalfScale;
using testing::parseYProgram;

// Y = X / sqrt(mean(X²) + ε) over the rows of X [16, 64], ε = 1e-6, written as `rms`.
graph::Program rmsNormWithEpsilon(const std::string& rms) {
  return parseYProgram("input X f32 [16, 64]\n", "Y = div(X, " + rms + ")\n");
}

const char* const kRms =
    "sqrt(add_scalar(scale(reduce_sum(square(X), dim=1), c=0.015625), c=1e-06))";

TEST(SigmoidAddScalar, RmsNormWithEpsilonRearrangedVerifiesAtLevelFiniteField) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const graph::Program reference = rmsNormWithEpsilon(kRms);
  // (Σ x²)/n + ε = Σ (x²/n) + ε = (Σ x² + n·ε)/n: exact in the field, since every double is
  // a dyadic rational and 64 · 1e-06 == 6.4e-05 in doubles (a power-of-two multiple).
  for (const std::string rms :
       {"sqrt(add_scalar(reduce_sum(scale(square(X), c=0.015625), dim=1), c=1e-06))",
        "sqrt(scale(add_scalar(reduce_sum(mul(X, X), dim=1), c=6.4e-05), c=0.015625))"}) {
    SCOPED_TRACE(rms);
    const EquivalenceReport report =
        checkAtHalfScale(reference, rmsNormWithEpsilon(rms), seed, false);
    EXPECT_TRUE(report.equivalent) << report.mismatch;
    EXPECT_EQ(report.level, VerificationLevel::FiniteField) << report.levelReason;
    EXPECT_LE(report.falseAcceptBound, 1e-12);
  }
}

TEST(SigmoidAddScalar, WrongEpsilonsAreRejectedByFingerprintsAlone) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const graph::Program reference = rmsNormWithEpsilon(kRms);
  for (const std::string rms :
       {"sqrt(add_scalar(scale(reduce_sum(square(X), dim=1), c=0.015625), c=1e-05))",
        "sqrt(add_scalar(scale(reduce_sum(square(X), dim=1), c=0.015625), c=-1e-06))",
        "sqrt(scale(reduce_sum(square(X), dim=1), c=0.015625))",
        "add_scalar(sqrt(scale(reduce_sum(square(X), dim=1), c=0.015625)), c=1e-06)",
        "sqrt(add_scalar(reduce_sum(square(X), dim=1), c=1e-06))"}) {
    SCOPED_TRACE(rms);
    const graph::Program wrong = rmsNormWithEpsilon(rms);
    EXPECT_FALSE(checkAtHalfScale(reference, wrong, seed, false).equivalent);
    const EquivalenceReport field = checkAtHalfScale(reference, wrong, seed, true);
    EXPECT_EQ(field.level, VerificationLevel::FiniteField) << field.levelReason;
    EXPECT_FALSE(field.equivalent) << "fingerprints alone accepted a wrong epsilon";
  }
}

graph::Program gate(const std::string& y) {
  return parseYProgram("input X f32 [16, 64]\n", "Y = " + y + "\n");
}

TEST(SigmoidAddScalar, SigmoidGatesVerifyRearrangedAndSwappedOpsAreRejected) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const graph::Program reference = gate("mul(X, sigmoid(X))");
  const EquivalenceReport same = checkAtHalfScale(
      reference, gate("mul(sigmoid(scale(scale(X, c=4), c=0.25)), X)"), seed, false);
  EXPECT_TRUE(same.equivalent) << same.mismatch;
  EXPECT_EQ(same.level, VerificationLevel::FiniteField) << same.levelReason;
  for (const char* y : {"mul(X, silu(X))", "mul(X, sigmoid(add_scalar(X, c=1)))",
                        "mul(X, sigmoid(scale(X, c=-1)))", "sigmoid(X)"}) {
    SCOPED_TRACE(y);
    const EquivalenceReport field = checkAtHalfScale(reference, gate(y), seed, true);
    EXPECT_EQ(field.level, VerificationLevel::FiniteField) << field.levelReason;
    EXPECT_FALSE(field.equivalent) << "fingerprints alone accepted a wrong gate";
  }
}

// silu(x) = x·sigmoid(x) for real numbers, so the float tests pass; in the field silu and
// sigmoid are two unrelated random functions, and the report says why it rejects.
TEST(SigmoidAddScalar, SiluAsXTimesSigmoidPassesFloatTestsAndIsRejectedAsUninterpreted) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const EquivalenceReport report =
      checkAtHalfScale(gate("silu(X)"), gate("mul(X, sigmoid(X))"), seed, false);
  EXPECT_FALSE(report.equivalent);
  EXPECT_EQ(report.level, VerificationLevel::FiniteField);
  EXPECT_LE(report.maxRelError, 1e-9);
  EXPECT_NE(report.mismatch.find("finite field"), std::string::npos) << report.mismatch;
  EXPECT_NE(report.mismatch.find("silu, sigmoid as uninterpreted"), std::string::npos)
      << report.mismatch;
}

// A dynamic graph passes RMSNorm's epsilon as an input [1, 1] (Dynamo lifts Python floats):
// drawn with either sign, the mean square plus a negative one has no root, and the reference is
// NaN there. Such a draw lies outside the program's domain: the float tests draw again, so the
// program is equivalent to itself and to its rearrangement, and a wrong epsilon is still
// refuted.
TEST(SigmoidAddScalar, AnEpsilonPassedAsAnInputIsTestedInsideTheDomain) {
  const auto program = [](const std::string& rms) {
    return parseYProgram("input X f32 [16, 64]\ninput E f32 [1, 1]\n", "Y = div(X, " + rms + ")\n");
  };
  const graph::Program reference =
      program("sqrt(add(scale(reduce_sum(square(X), dim=1), c=0.015625), E))");
  const graph::Program rearranged =
      program("sqrt(add(reduce_sum(scale(square(X), c=0.015625), dim=1), E))");
  const graph::Program wrong =
      program("sqrt(add(scale(reduce_sum(square(X), dim=1), c=0.03125), E))");
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(testing::seedTrace(seed));
    EquivalenceOptions options;
    options.seed = seed;
    EXPECT_TRUE(checkEquivalence(reference, reference, options).equivalent);
    const EquivalenceReport report = checkEquivalence(reference, rearranged, options);
    EXPECT_TRUE(report.equivalent) << report.mismatch;
    EXPECT_EQ(report.level, VerificationLevel::FiniteField);
    EXPECT_FALSE(checkEquivalence(reference, wrong, options).equivalent);
  }
}

}  // namespace
}  // namespace mugraph::verify
