// The mutation suite of programs with uninterpreted ops (rms_norm's sqrt, silu): wrong variants
// of an RMSNorm + matmul, a gated MLP and a QK-norm program must be rejected by fingerprints
// alone (float tests off), covering a swapped unary op, a wrong dim, a missing square, a norm
// over the wrong sum and the wrong operand gated; correct variants (other tilings, algebraically
// equal rearrangements) must verify at level finite-field. A variant that relies on an identity
// of the real sqrt passes the float tests and is rejected by fingerprints, which say why.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>

#include "graph/error.h"
#include "verify/equivalence.h"
#include "verify/normalized_programs.h"
#include "verify/test_support.h"

namespace mugraph::verify {
namespace {

using graph::OpKind;
using testing::MlpChoices;
using testing::QkNormChoices;
using testing::RmsNormChoices;

enum class Expect { Wrong, Correct, RealIdentity };

struct Variant {
  std::string name;
  std::function<graph::KernelGraph()> build;
  Expect expect = Expect::Wrong;
};

std::string verdict(const EquivalenceReport& report) {
  if (report.equivalent) return "accepted (" + std::string(levelName(report.level)) + ")";
  const bool field = report.mismatch.find("finite field") != std::string::npos;
  return field ? "rejected by fingerprints" : "rejected by float tests";
}

// Each variant is checked twice: as `mugraph verify` does (float tests, then fingerprints) and
// with fingerprints alone, one trial, so the field is shown to reject on its own. Prints the
// mutation table.
void runVariants(const std::string& family, const graph::Program& program,
                 const std::vector<Variant>& variants) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(family + " " + testing::seedTrace(seed));
  int wrong = 0, rejectedAlone = 0, correct = 0, accepted = 0;
  for (const Variant& variant : variants) {
    SCOPED_TRACE(variant.name);
    graph::KernelGraph candidate;
    try {
      candidate = variant.build();
    } catch (const UserError& e) {
      ADD_FAILURE() << "every variant here is a valid graph: " << e.what();
      continue;
    }
    EquivalenceOptions options;
    options.seed = seed;
    options.floatScales = {0.5};
    const EquivalenceReport full = checkEquivalence(program, candidate, options);
    std::string alone = "-";
    if (variant.expect == Expect::Correct) {
      ++correct;
      EXPECT_TRUE(full.equivalent) << full.mismatch;
      EXPECT_EQ(full.level, VerificationLevel::FiniteField) << full.levelReason;
      EXPECT_LE(full.falseAcceptBound, 1e-12);
      accepted += full.equivalent;
    } else {
      ++wrong;
      EXPECT_FALSE(full.equivalent) << "a wrong variant verified";
      EquivalenceOptions fingerprintsOnly = options;
      fingerprintsOnly.floatScales.clear();
      fingerprintsOnly.trials = 1;
      const EquivalenceReport field = checkEquivalence(program, candidate, fingerprintsOnly);
      EXPECT_EQ(field.level, VerificationLevel::FiniteField) << field.levelReason;
      EXPECT_FALSE(field.equivalent) << "fingerprints alone accepted a wrong variant";
      rejectedAlone += !field.equivalent && field.level == VerificationLevel::FiniteField;
      alone = verdict(field);
    }
    if (variant.expect == Expect::RealIdentity) {
      // The real functions agree, so the float tests pass; fingerprints reject and say why.
      EXPECT_NE(full.mismatch.find("finite field"), std::string::npos) << full.mismatch;
      EXPECT_NE(full.mismatch.find("uninterpreted"), std::string::npos) << full.mismatch;
    }
    std::cout << "[mutation table] " << family << " | " << variant.name << " | "
              << (variant.expect == Expect::Correct ? "correct" : "wrong") << " | " << verdict(full)
              << " | fingerprints alone: " << alone << "\n";
  }
  std::cout << "[mutation suite] " << family << ": " << wrong << " wrong variants, "
            << rejectedAlone << " rejected by fingerprints alone; " << correct
            << " correct variants, " << accepted << " accepted\n";
}

TEST(UninterpretedMutationSuite, RmsNormMatmulWrongVariantsRejectedByFingerprintsAlone) {
  const graph::Program p = testing::rmsNormMatmulProgram();
  const auto fused = [p](RmsNormChoices c) {
    return [p, c] { return testing::rmsNormMatmulSchedule(p, c); };
  };
  runVariants(
      "rmsnorm_matmul", p,
      {
          {"sqrt swapped for silu", fused({.root = OpKind::Silu})},
          {"sqrt swapped for exp", fused({.root = OpKind::Exp})},
          {"missing square", fused({.square = false})},
          {"mean over one tile's count (1/64)", fused({.meanScale = 1.0 / 64})},
          {"each tile normalized by its own partial sum", fused({.normalizeEachTile = true})},
          {"norm over the wrong dim (columns)",
           [p] { return testing::rmsNormMatmulUnfused(p, 0); }},
          {"sqrt(mean) taken as sqrt(sum)·sqrt(1/n)", fused({.rootBeforeMean = true}),
           Expect::RealIdentity},
          {"fused, 4 blocks x 4 iterations", fused({}), Expect::Correct},
          {"fused, 2 blocks x 8 iterations", fused({.grid = 2, .forloop = 8}), Expect::Correct},
          {"fused, 8 blocks x 2 iterations", fused({.grid = 8, .forloop = 2}), Expect::Correct},
          {"rms_norm op in the block, then matmul", fused({.forloop = 1, .normInBlock = true}),
           Expect::Correct},
          {"norm in predefined ops, then matmul",
           [p] { return testing::rmsNormMatmulUnfused(p, 1); }, Expect::Correct},
      });
}

TEST(UninterpretedMutationSuite, MlpWrongVariantsRejectedByFingerprintsAlone) {
  const graph::Program p = testing::mlpProgram();
  const auto fused = [p](MlpChoices c) { return [p, c] { return testing::mlpSchedule(p, c); }; };
  runVariants(
      "mlp", p,
      {
          {"silu swapped for sqrt", fused({.gate = OpKind::Sqrt})},
          {"silu swapped for exp", fused({.gate = OpKind::Exp})},
          {"wrong operand gated (silu(X·W3)·X·W1)", fused({.gateW3 = true})},
          {"X·W1 for both factors", fused({.upIsW1 = true})},
          {"silu of each tile's partial product", fused({.gateEachTile = true})},
          {"silu swapped for sqrt after a tiled kernel",
           fused({.gate = OpKind::Sqrt, .gateInSecondKernel = true})},
          {"fused, 4 blocks x 4 iterations", fused({}), Expect::Correct},
          {"fused, 2 blocks x 8 iterations", fused({.grid = 2, .forloop = 8}), Expect::Correct},
          {"product operands swapped", fused({.upFirst = true}), Expect::Correct},
          {"tiled products, gate in predefined ops", fused({.gateInSecondKernel = true}),
           Expect::Correct},
      });
}

TEST(UninterpretedMutationSuite, QkNormWrongVariantsRejectedByFingerprintsAlone) {
  const graph::Program p = testing::qkNormProgram();
  const auto fused = [p](QkNormChoices c) {
    return [p, c] { return testing::qkNormSchedule(p, c); };
  };
  runVariants(
      "qk_norm", p,
      {
          {"sqrt swapped for silu", fused({.root = OpKind::Silu})},
          {"sqrt swapped for exp", fused({.root = OpKind::Exp})},
          {"missing square of Q", fused({.squareQ = false})},
          {"K divided by Q's norm", fused({.kNormFromQ = true})},
          {"K normalized over the key dim", [p] { return testing::qkNormKernelLevel(p, 2, 2); }},
          {"Q normalized over the row dim", [p] { return testing::qkNormKernelLevel(p, 1, 1); }},
          {"one root of the product of the means", fused({.jointRoot = true}),
           Expect::RealIdentity},
          {"fused, 2 key splits x 4 iterations", fused({}), Expect::Correct},
          {"fused, no key split, 2 iterations", fused({.keySplits = 1, .forloop = 2}),
           Expect::Correct},
          {"rms_norm ops in the block, then matmul", fused({.forloop = 1, .normInBlock = true}),
           Expect::Correct},
          {"norms in predefined ops", [p] { return testing::qkNormKernelLevel(p, 2, 1); },
           Expect::Correct},
      });
}

}  // namespace
}  // namespace mugraph::verify
