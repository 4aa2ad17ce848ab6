// The search on programs with ops the finite field leaves uninterpreted: a gated MLP
// (silu(X·W1)·(X·W3)), QK-norm (rms_norm on Q and K before Q·K), RMSNorm + matmul, RMSNorm
// with epsilon (add_scalar) times a weight, and a sigmoid gate, at small shapes. Every
// reported variant is verified at level finite-field with a bound of at most 1e-12, no longer
// by float tests alone.
#include <gtest/gtest.h>

#include "graph/program_text.h"
#include "search_support.h"
#include "verify/normalized_programs.h"

namespace mugraph::search {
namespace {

void expectVariantsVerifiedInTheField(const graph::Program& program) {
  SCOPED_TRACE(program.name);
  SearchOptions options = testing::quietOptions(program);
  options.config.maxVariants = 2;
  const SearchResult result = superoptimize(program, options);
  ASSERT_FALSE(result.variants.empty());
  for (const VerifiedVariant& v : result.variants) {
    SCOPED_TRACE(v.name);
    EXPECT_EQ(v.verification.level, "finite-field");
    EXPECT_LE(v.verification.falseAcceptBound, 1e-12);
  }
}

TEST(NormalizedProgramsSearch, MlpVariantsVerifyInTheField) {
  expectVariantsVerifiedInTheField(verify::testing::mlpProgram());
}

TEST(NormalizedProgramsSearch, QkNormVariantsVerifyInTheField) {
  expectVariantsVerifiedInTheField(verify::testing::qkNormProgram());
}

TEST(NormalizedProgramsSearch, RmsNormMatmulVariantsVerifyInTheField) {
  expectVariantsVerifiedInTheField(verify::testing::rmsNormMatmulProgram());
}

// RMSNorm as ONNX writes it, epsilon included (the ONNX importer maps `+ eps` to add_scalar),
// times a weight row.
TEST(NormalizedProgramsSearch, RmsNormWithEpsilonVariantsVerifyInTheField) {
  expectVariantsVerifiedInTheField(graph::parseProgramText(R"(program rmsnorm_eps_small
input X f16 [16, 256]
input W f16 [1, 256]
R = sqrt(add_scalar(scale(reduce_sum(square(X), dim=1), c=0.00390625), c=1e-06))
Y = mul(div(X, R), W)
output Y
)",
                                                           "rmsnorm_eps_small.mg"));
}

TEST(NormalizedProgramsSearch, SigmoidGateVariantsVerifyInTheField) {
  expectVariantsVerifiedInTheField(graph::parseProgramText(R"(program sigmoid_gate_small
input X f16 [16, 256]
Y = mul(X, sigmoid(X))
output Y
)",
                                                           "sigmoid_gate_small.mg"));
}

}  // namespace
}  // namespace mugraph::search
