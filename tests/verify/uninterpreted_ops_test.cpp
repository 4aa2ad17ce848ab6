// The finite-field meaning of ops without an algebraic one (sqrt, silu, sigmoid, rms_norm's
// root, exp of an exp value): a per-trial random function, consistent (equal arguments, equal
// results), different per op kind and per trial; rms_norm is the interpreter's composite with
// that sqrt. Schedules that apply these ops to algebraically equal arguments verify at level
// finite-field; one that relies on an identity of the real function is rejected, and says so.
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "verify/equivalence.h"
#include "verify/fingerprint.h"
#include "verify/interpreter.h"
#include "verify/test_support.h"

namespace mugraph::verify {
namespace {

using graph::DType;
using graph::GraphBuilder;
using graph::OpKind;
using graph::TensorId;

// A program over [6, 8] inputs X and Y whose output R is `body`.
graph::Program program(const std::function<TensorId(GraphBuilder&, TensorId, TensorId)>& body) {
  GraphBuilder g("p");
  const TensorId x = g.input("X", DType::F32, {6, 8});
  const TensorId y = g.input("Y", DType::F32, {6, 8});
  g.output(g.op(OpKind::Scale, {body(g, x, y)}, {.scale = 1.0}, "R"));
  return g.finish();
}

std::vector<FieldElement> fieldOutput(const graph::Program& p,
                                      const TensorMap<FieldElement>& inputs,
                                      const TrialMeaning& meaning) {
  return evaluate(p, inputs, meaning).at("R").data;
}

size_t countEqual(const std::vector<FieldElement>& a, const std::vector<FieldElement>& b) {
  size_t equal = 0;
  for (size_t i = 0; i < a.size(); ++i) equal += a[i] == b[i];
  return equal;
}

TEST(UninterpretedOps, EqualArgumentsGiveEqualValuesAndOpsAndTrialsDiffer) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const TensorMap<FieldElement> inputs =
      randomFieldInputs(program([](auto&, auto x, auto) { return x; }), seed);
  const TrialMeaning trial = trialMeaning(seed, false);
  const TrialMeaning otherTrial = trialMeaning(seed + 1, false);
  const std::vector<OpKind> uninterpreted = {OpKind::Sqrt, OpKind::Silu, OpKind::Sigmoid,
                                             OpKind::Tanh, OpKind::Erf,  OpKind::Relu};
  for (OpKind kind : uninterpreted) {
    SCOPED_TRACE(std::string(graph::opName(kind)));
    const auto xy = program([kind](GraphBuilder& g, TensorId x, TensorId y) {
      return g.op(kind, {g.op(OpKind::Mul, {x, y})});
    });
    const auto yxPlusZero = program([kind](GraphBuilder& g, TensorId x, TensorId y) {
      const TensorId zero = g.op(OpKind::Sub, {x, x});
      return g.op(kind, {g.op(OpKind::Add, {g.op(OpKind::Mul, {y, x}), zero})});
    });
    const std::vector<FieldElement> value = fieldOutput(xy, inputs, trial);
    EXPECT_EQ(value, fieldOutput(yxPlusZero, inputs, trial));
    EXPECT_EQ(countEqual(value, fieldOutput(xy, inputs, otherTrial)), 0u);
    for (OpKind other : uninterpreted) {
      if (other == kind) continue;
      const auto otherOp = program([other](GraphBuilder& g, TensorId x, TensorId y) {
        return g.op(other, {g.op(OpKind::Mul, {x, y})});
      });
      EXPECT_EQ(countEqual(value, fieldOutput(otherOp, inputs, trial)), 0u) << graph::opName(other);
    }
  }
}

TEST(UninterpretedOps, RmsNormIsTheInterpretersCompositeWithSqrtUninterpreted) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  for (int dim : {0, 1}) {
    const auto norm = program([dim](GraphBuilder& g, TensorId x, TensorId) {
      return g.op(OpKind::RmsNorm, {x}, {.dim = dim});
    });
    const auto composite = program([dim](GraphBuilder& g, TensorId x, TensorId) {
      const double n = dim == 0 ? 6.0 : 8.0;
      const TensorId sum = g.op(OpKind::ReduceSum, {g.op(OpKind::Square, {x})}, {.dim = dim});
      return g.op(OpKind::Div,
                  {x, g.op(OpKind::Sqrt, {g.op(OpKind::Scale, {sum}, {.scale = 1.0 / n})})});
    });
    const TensorMap<FieldElement> inputs = randomFieldInputs(norm, seed + dim);
    const TrialMeaning trial = trialMeaning(seed, false);
    EXPECT_EQ(fieldOutput(norm, inputs, trial), fieldOutput(composite, inputs, trial));
  }
}

// exp of a value without a q-part is a random function of it: consistent, but the homomorphism
// exp(a + b) = exp(a)·exp(b) is not honoured for such arguments (verify/README.md).
TEST(UninterpretedOps, ExpOfAnExpValueIsConsistentButNotAHomomorphism) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const auto twice = program([](GraphBuilder& g, TensorId x, TensorId y) {
    return g.op(OpKind::Exp, {g.op(OpKind::Add, {g.op(OpKind::Exp, {x}), g.op(OpKind::Exp, {y})})});
  });
  const auto swapped = program([](GraphBuilder& g, TensorId x, TensorId y) {
    return g.op(OpKind::Exp, {g.op(OpKind::Add, {g.op(OpKind::Exp, {y}), g.op(OpKind::Exp, {x})})});
  });
  const auto product = program([](GraphBuilder& g, TensorId x, TensorId y) {
    return g.op(OpKind::Mul, {g.op(OpKind::Exp, {g.op(OpKind::Exp, {x})}),
                              g.op(OpKind::Exp, {g.op(OpKind::Exp, {y})})});
  });
  const TensorMap<FieldElement> inputs = randomFieldInputs(twice, seed);
  const TrialMeaning trial = trialMeaning(seed, false);
  const std::vector<FieldElement> value = fieldOutput(twice, inputs, trial);
  EXPECT_EQ(value, fieldOutput(swapped, inputs, trial));
  EXPECT_EQ(countEqual(value, fieldOutput(product, inputs, trial)), 0u);
  for (const FieldElement& v : value) EXPECT_FALSE(v.hasQPart());
}

TEST(UninterpretedOps, ASqrtIdentityOfTheRealFunctionIsRejectedAndTheReportSaysWhy) {
  // sqrt(X²·Y²) = sqrt(X²)·sqrt(Y²) for real numbers; the float tests agree, fingerprints do not.
  const auto joint = program([](GraphBuilder& g, TensorId x, TensorId y) {
    return g.op(OpKind::Sqrt,
                {g.op(OpKind::Mul, {g.op(OpKind::Square, {x}), g.op(OpKind::Square, {y})})});
  });
  const auto split = program([](GraphBuilder& g, TensorId x, TensorId y) {
    return g.op(OpKind::Mul, {g.op(OpKind::Sqrt, {g.op(OpKind::Square, {x})}),
                              g.op(OpKind::Sqrt, {g.op(OpKind::Square, {y})})});
  });
  EquivalenceOptions options;
  options.seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(options.seed));
  const EquivalenceReport report = checkEquivalence(joint, split, options);
  EXPECT_FALSE(report.equivalent);
  EXPECT_EQ(report.level, VerificationLevel::FiniteField);
  EXPECT_LE(report.maxRelError, options.floatTolerance);
  EXPECT_NE(report.mismatch.find("finite field"), std::string::npos) << report.mismatch;
  EXPECT_NE(report.mismatch.find("sqrt as uninterpreted"), std::string::npos) << report.mismatch;
  // The same graphs written in another order agree at level finite-field.
  const auto jointSwapped = program([](GraphBuilder& g, TensorId x, TensorId y) {
    return g.op(OpKind::Sqrt,
                {g.op(OpKind::Mul, {g.op(OpKind::Square, {y}), g.op(OpKind::Square, {x})})});
  });
  const EquivalenceReport same = checkEquivalence(joint, jointSwapped, options);
  EXPECT_TRUE(same.equivalent) << same.mismatch;
  EXPECT_EQ(same.level, VerificationLevel::FiniteField);
  EXPECT_LE(same.falseAcceptBound, 1e-12);
}

}  // namespace
}  // namespace mugraph::verify
