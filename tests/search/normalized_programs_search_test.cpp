// The search on programs with ops the finite field leaves uninterpreted: a gated MLP
// (silu(X·W1)·(X·W3)), QK-norm (rms_norm on Q and K before Q·K) and RMSNorm + matmul, at small
// shapes. Every reported variant is verified at level finite-field with a bound of at most
// 1e-12, no longer by float tests alone.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace mugraph::search
