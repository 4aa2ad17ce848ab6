// The false-accept bound: the formula (ε = D/p without exp, D/q with exp, plus the collision
// term of random functions, ε^k for k trials), the degrees the degree domain measures on
// hand-checked programs, and that a full check reports exactly the bound the formula gives for
// its degree and trial count.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "graph/builder.h"
#include "graph/files.h"
#include "verify/equivalence.h"
#include "verify/false_accept_bound.h"
#include "verify/fingerprint.h"
#include "verify/finite_field.h"
#include "verify/interpreter.h"
#include "verify/normalized_programs.h"

namespace mugraph::verify {
namespace {

using graph::DType;
using graph::GraphBuilder;
using graph::OpKind;

constexpr double kP = static_cast<double>(FieldParameters::p);
constexpr double kQ = static_cast<double>(FieldParameters::q);

TEST(FalseAcceptBound, FieldParametersAreTheStatedPrimesWithQDividingPMinusOne) {
  auto isPrime = [](uint64_t n) {
    if (n < 2) return false;
    for (uint64_t d = 2; d * d <= n; ++d) {
      if (n % d == 0) return false;
    }
    return true;
  };
  EXPECT_TRUE(isPrime(FieldParameters::p));
  EXPECT_TRUE(isPrime(FieldParameters::q));
  EXPECT_EQ((FieldParameters::p - 1) % FieldParameters::q, 0u);
  EXPECT_GE(FieldParameters::q, uint64_t{1} << 30);
  // ω has order exactly q: ω^q = 1 and ω != 1 (q is prime).
  EXPECT_NE(field::omegaPower(1), 1u);
  EXPECT_EQ(field::mulModP(field::omegaPower(static_cast<uint32_t>(FieldParameters::q - 1)),
                           field::omegaPower(1)),
            1u);
}

TEST(FalseAcceptBound, PerTrialAndTotalFollowTheFormula) {
  for (int64_t degree : {1, 2, 7, 4096}) {
    EXPECT_DOUBLE_EQ(perTrialBound(degree, false), static_cast<double>(degree) / kP);
    EXPECT_DOUBLE_EQ(perTrialBound(degree, true), static_cast<double>(degree) / kQ);
    for (int k : {1, 2, 5}) {
      EXPECT_DOUBLE_EQ(falseAcceptBound(perTrialBound(degree, true), k),
                       std::pow(static_cast<double>(degree) / kQ, k));
    }
  }
  EXPECT_DOUBLE_EQ(perTrialBound(int64_t{1} << 40, true), 1.0);  // capped: no guarantee
}

TEST(FalseAcceptBound, TrialsAreTheFewestReachingTheTarget) {
  const double eps = perTrialBound(2, true);  // ≈ 9.3e-10
  EXPECT_EQ(trialsForBound(eps, 1e-12, 64), 2);
  EXPECT_EQ(trialsForBound(eps, 1e-9, 64), 1);
  EXPECT_EQ(trialsForBound(0.5, 1e-12, 64), 40);  // 0.5^40 ≈ 9.1e-13
  EXPECT_EQ(trialsForBound(0.5, 1e-12, 10), 10);  // capped
  // A bound of 1 is 1 after any number of trials: the few that still catch a wrong schedule.
  EXPECT_EQ(trialsForBound(1.0, 1e-12, 64), kTrialsWithoutBound);
  EXPECT_EQ(trialsForBound(1.0, 1e-12, 1), 1);
  EXPECT_EQ(trialsForBound(0.999, 1e-12, 64), 64);  // each trial still lowers it
}

struct Pair {
  graph::Program a, b;
};

// A [4, 4] f32 input named `name` on the builder.
graph::TensorId in(GraphBuilder& g, const char* name) {
  return g.input(name, DType::F32, {4, 4});
}

int64_t applicationsCounted(const ArgumentCounts& counts) {
  int64_t n = 0;
  for (int64_t c : counts.byDegree) n += c;
  return n;
}

Pair twoPrograms(const std::function<graph::TensorId(GraphBuilder&)>& first,
                 const std::function<graph::TensorId(GraphBuilder&)>& second) {
  GraphBuilder a("a"), b("b");
  for (GraphBuilder* g : {&a, &b}) {
    in(*g, "X");
    in(*g, "Y");
    in(*g, "Z");
  }
  a.op(OpKind::Scale, {first(a)}, {.scale = 1.0}, "R");
  b.op(OpKind::Scale, {second(b)}, {.scale = 1.0}, "R");
  a.output(*a.graph().findTensor("R"));
  b.output(*b.graph().findTensor("R"));
  return {a.finish(), b.finish()};
}

TEST(FalseAcceptBound, DegreesOfHandCheckedDifferences) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  // X·Y against Y·X: a degree-2 polynomial on both sides.
  Pair p = twoPrograms(
      [](GraphBuilder& g) {
        return g.op(OpKind::Mul, {0, 1});
      },
      [](GraphBuilder& g) {
        return g.op(OpKind::Mul, {1, 0});
      });
  EXPECT_EQ(differenceDegree(p.a, p.b, seed).degree, 2);
  // (X+Y)/Z against X/Z + Y/Z: both share the denominator Z, so the difference is (X+Y-X-Y)/Z
  // and its numerator has degree 1.
  p = twoPrograms(
      [](GraphBuilder& g) {
        return g.op(OpKind::Div, {g.op(OpKind::Add, {0, 1}), 2});
      },
      [](GraphBuilder& g) {
        return g.op(OpKind::Add, {g.op(OpKind::Div, {0, 2}), g.op(OpKind::Div, {1, 2})});
      });
  EXPECT_EQ(differenceDegree(p.a, p.b, seed).degree, 1);
  // X/Y against X/Z: denominators differ, X·Z − X·Y has degree 2.
  p = twoPrograms(
      [](GraphBuilder& g) {
        return g.op(OpKind::Div, {0, 1});
      },
      [](GraphBuilder& g) {
        return g.op(OpKind::Div, {0, 2});
      });
  EXPECT_EQ(differenceDegree(p.a, p.b, seed).degree, 2);
  // exp(X)·Y: each exp value is one fresh variable; the report notes exp.
  p = twoPrograms(
      [](GraphBuilder& g) {
        return g.op(OpKind::Mul, {g.op(OpKind::Exp, {0}), 1});
      },
      [](GraphBuilder& g) {
        return g.op(OpKind::Mul, {1, g.op(OpKind::Exp, {0})});
      });
  const DegreeReport withExp = differenceDegree(p.a, p.b, seed);
  EXPECT_EQ(withExp.degree, 2);
  EXPECT_TRUE(withExp.usesExp);
  // A matmul over 4 terms of degree 2 stays degree 2 (a sum does not raise the degree).
  p = twoPrograms(
      [](GraphBuilder& g) {
        return g.op(OpKind::Matmul, {0, 1});
      },
      [](GraphBuilder& g) {
        return g.op(OpKind::Matmul, {0, 1});
      });
  EXPECT_EQ(differenceDegree(p.a, p.b, seed).degree, 2);
}

TEST(FalseAcceptBound, CollisionTermIsAUnionBoundOverPairsOfApplications) {
  DegreeReport report;
  report.degree = 3;
  EXPECT_EQ(collisionBound(report, MaxMeaning::Selection), 0.0);  // no random function, no max
  report.argumentDegree = 2;
  for (int64_t n : {2, 40, 1040}) {
    report.applications = n;
    const double pairs = static_cast<double>(n) * static_cast<double>(n - 1) / 2;
    // Two distinct arguments differ by a rational function of degree at most 2·2; the random
    // function keys on both parts, evaluations of it at independent points: they collide with
    // probability (4/p)·(4/q).
    EXPECT_DOUBLE_EQ(collisionBound(report, MaxMeaning::Any), pairs * (4.0 / kP) * (4.0 / kQ));
    EXPECT_DOUBLE_EQ(perTrialBound(report, MaxMeaning::Any),
                     3.0 / kP + collisionBound(report, MaxMeaning::Any));
  }
  // An argument through exp (no q-part) or a max: its p-part alone, 2d/q per pair.
  report.argumentDegreePPart = 5;
  EXPECT_DOUBLE_EQ(collisionBound(report, MaxMeaning::Any), 1040.0 * 1039.0 / 2 * (10.0 / kQ));
  report.applications = int64_t{1} << 20;
  EXPECT_DOUBLE_EQ(collisionBound(report, MaxMeaning::Any), 1.0);  // capped: no guarantee
  EXPECT_DOUBLE_EQ(perTrialBound(report, MaxMeaning::Any), 1.0);
  // Without such arguments, an LLM MLP's silu over 512 rows x 8192 in both graphs (2^23
  // applications, arguments of degree 8) keeps a bound: 9.8e-4 per trial (four trials give
  // 9.1e-13), where a random function of the p-part alone passed 1 by five orders.
  report.argumentDegreePPart = -1;
  report.argumentDegree = 8;
  report.applications = int64_t{1} << 23;
  const double pairs = 8388608.0 * 8388607.0 / 2;
  EXPECT_DOUBLE_EQ(collisionBound(report, MaxMeaning::Any), pairs * (16.0 / kP) * (16.0 / kQ));
  EXPECT_LT(collisionBound(report, MaxMeaning::Any), 1e-3);
  EXPECT_GE(pairs * (16.0 / kP), 1.0);
}

TEST(FalseAcceptBound, CountedApplicationsPayForEachPairAtItsOwnLargerDegree) {
  // An LLM layer's shape: 2^23 silu arguments of degree 5 beside 4096 square roots of degree
  // 14. The largest degree for every pair (16, the class it falls in) gives 3.9e-3 per trial;
  // each pair at its own larger degree gives 3.8e-4, which the check then uses.
  DegreeReport report;
  report.argumentDegree = 16;
  report.applications = (int64_t{1} << 23) + 4096;
  ArgumentCounts counts;
  for (int i = 0; i < 4096; ++i) counts.add(14);
  counts.byDegree[5] = int64_t{1} << 23;
  report.bothPartsArguments = counts;
  const auto collide = [](double d) { return (2 * d / kP) * (2 * d / kQ); };
  const double silu = 8388608.0, roots = 4096.0;
  const double byDegree = silu * (silu - 1) / 2 * collide(5) +
                          (roots * (roots - 1) / 2 + roots * silu) * collide(14);
  const double n = silu + roots;
  const double largest = n * (n - 1) / 2 * collide(16);
  EXPECT_DOUBLE_EQ(collisionBound(report, MaxMeaning::Any), byDegree);
  EXPECT_LT(byDegree, largest / 8);
  EXPECT_NEAR(largest, 3.9e-3, 1e-4);
  EXPECT_NEAR(byDegree, 3.8e-4, 1e-5);
  // Four trials then reach 1e-12, where the largest degree needed five.
  EXPECT_EQ(trialsForBound(perTrialBound(report, MaxMeaning::Any), 1e-12, 64), 4);
  report.bothPartsArguments.reset();
  EXPECT_EQ(trialsForBound(perTrialBound(report, MaxMeaning::Any), 1e-12, 64), 5);
  // Degrees past the exact ones count together at the largest of them.
  counts = ArgumentCounts{};
  counts.add(100);
  counts.add(300);
  EXPECT_EQ(counts.byDegree[ArgumentCounts::kExact], 2);
  EXPECT_EQ(counts.largest, 300);
  report.bothPartsArguments = counts;
  report.argumentDegree = 512;
  report.applications = 2;
  EXPECT_DOUBLE_EQ(collisionBound(report, MaxMeaning::Any), collide(300));
  // A p-part-alone argument keeps every pair's 2d/q, and the sum is never above the bound
  // without counts.
  report.argumentDegreePPart = 3;
  report.applications = 10;
  const double pairs = 45;
  EXPECT_DOUBLE_EQ(collisionBound(report, MaxMeaning::Any),
                   std::min(pairs * std::max(collide(512), 6 / kQ), collide(300) + pairs * 6 / kQ));
}

TEST(FalseAcceptBound, WhereMaxSelectsEachComparisonMayTieTwoOperandsSharingAPPart) {
  DegreeReport report;
  report.degree = 2;
  report.maxOperandDegree = 2;
  report.maxComparisons = 1000;
  // Max as a random function of its operands: a tie is one more collision of its arguments,
  // which the bound does not count (verify/README.md, "max").
  EXPECT_EQ(collisionBound(report, MaxMeaning::Any), 0.0);
  // Selection: each comparison of two distinct operands of degree at most 2 ties with
  // probability at most 4/q.
  EXPECT_DOUBLE_EQ(collisionBound(report, MaxMeaning::Selection), 1000 * (4.0 / kQ));
  report.argumentDegree = 2;
  report.applications = 40;
  EXPECT_DOUBLE_EQ(collisionBound(report, MaxMeaning::Selection),
                   40.0 * 39.0 / 2 * (4.0 / kP) * (4.0 / kQ) + 1000 * (4.0 / kQ));
  report.maxComparisons = int64_t{1} << 40;
  EXPECT_DOUBLE_EQ(collisionBound(report, MaxMeaning::Selection), 1.0);  // capped
}

TEST(FalseAcceptBound, MaxRecordsItsOperandsDegreeAndEveryComparisonCounts) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  // reduce_max over the rows of X·Y: operands of degree 2, 16 comparisons in each graph (one
  // per element, an upper bound).
  const auto rowMax = [](GraphBuilder& g) {
    graph::OpAttrs attrs;
    attrs.dim = 1;
    return g.op(OpKind::ReduceMax, {g.op(OpKind::Mul, {0, 1})}, attrs);
  };
  GraphBuilder a("a"), b("b");
  for (GraphBuilder* g : {&a, &b}) {
    for (const char* name : {"X", "Y", "Z"}) in(*g, name);
    g->output(g->op(OpKind::Scale, {rowMax(*g)}, {.scale = 1.0}, "R"));
  }
  const DegreeReport report = differenceDegree(a.finish(), b.finish(), seed);
  EXPECT_EQ(report.maxOperandDegree, 2);
  EXPECT_EQ(report.maxComparisons, 2 * 16);
  EXPECT_EQ(report.argumentDegree, -1);  // max's operands are no random function's arguments
}

TEST(FalseAcceptBound, RandomFunctionValuesAreFreshVariablesOfDegreeOne) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  // sqrt(X·Y) against sqrt(Y·X): one fresh variable on both sides, its argument of degree 2;
  // 16 elements each, 32 applications.
  Pair p = twoPrograms(
      [](GraphBuilder& g) {
        return g.op(OpKind::Sqrt, {g.op(OpKind::Mul, {0, 1})});
      },
      [](GraphBuilder& g) {
        return g.op(OpKind::Sqrt, {g.op(OpKind::Mul, {1, 0})});
      });
  DegreeReport report = differenceDegree(p.a, p.b, seed);
  EXPECT_EQ(report.degree, 1);
  EXPECT_EQ(report.argumentDegree, 2);
  EXPECT_EQ(report.argumentDegreePPart, -1);
  EXPECT_EQ(report.applications, 32);
  // Counted as they are evaluated, by their arguments' degrees: all 32 of degree 2.
  ASSERT_TRUE(report.bothPartsArguments);
  EXPECT_EQ(report.bothPartsArguments->byDegree[2], 32);
  EXPECT_EQ(applicationsCounted(*report.bothPartsArguments), 32);
  // silu(X)·Z/Y: degree 2 over the denominator Y; rms_norm over the rows of X: X / r, one
  // root per row (4 rows), its argument the mean of squares (degree 2).
  p = twoPrograms(
      [](GraphBuilder& g) {
        return g.op(OpKind::Div, {g.op(OpKind::Mul, {g.op(OpKind::Silu, {0}), 2}), 1});
      },
      [](GraphBuilder& g) { return g.op(OpKind::RmsNorm, {0}, {.dim = 1}); });
  report = differenceDegree(p.a, p.b, seed);
  EXPECT_EQ(report.degree, 3);  // (silu·Z)·r − X·Y over Y·r
  EXPECT_EQ(report.argumentDegree, 2);
  EXPECT_EQ(report.applications, 16 + 4);
  // silu's 16 arguments are X (degree 1), the 4 roots' the means of squares (degree 2).
  EXPECT_EQ(report.bothPartsArguments->byDegree[1], 16);
  EXPECT_EQ(report.bothPartsArguments->byDegree[2], 4);
  EXPECT_EQ(applicationsCounted(*report.bothPartsArguments), 20);
  // silu of an exp value: its argument has no q-part, so only its p-part is free.
  p = twoPrograms([](GraphBuilder& g) { return g.op(OpKind::Silu, {g.op(OpKind::Exp, {0})}); },
                  [](GraphBuilder& g) { return g.op(OpKind::Silu, {g.op(OpKind::Exp, {0})}); });
  report = differenceDegree(p.a, p.b, seed);
  EXPECT_EQ(report.argumentDegree, -1);
  EXPECT_EQ(report.argumentDegreePPart, 1);
  EXPECT_TRUE(report.usesExp);
  EXPECT_EQ(applicationsCounted(*report.bothPartsArguments), 0);  // none keyed on both parts
  // exp of an exp value is a random function too, and every exp then counts as an application.
  p = twoPrograms([](GraphBuilder& g) { return g.op(OpKind::Exp, {g.op(OpKind::Exp, {0})}); },
                  [](GraphBuilder& g) { return g.op(OpKind::Exp, {g.op(OpKind::Exp, {0})}); });
  report = differenceDegree(p.a, p.b, seed);
  EXPECT_EQ(report.argumentDegreePPart, 1);
  EXPECT_EQ(report.applications, 4 * 16);
}

// What the collision term pays for: sqrt(X)·Y and sqrt(Z)·Y differ, and fingerprints reject
// them, but a draw on which the two arguments collide (Z = X) makes the trial agree.
TEST(FalseAcceptBound, CollidingArgumentsMakeDifferentProgramsAgreeAndTheCheckRejectsThem) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Pair p = twoPrograms(
      [](GraphBuilder& g) {
        return g.op(OpKind::Mul, {g.op(OpKind::Sqrt, {0}), 1});
      },
      [](GraphBuilder& g) {
        return g.op(OpKind::Mul, {g.op(OpKind::Sqrt, {2}), 1});
      });
  TensorMap<FieldElement> inputs = randomFieldInputs(p.a, seed);
  const TrialMeaning meaning = trialMeaning(seed, false);
  EXPECT_NE(evaluate(p.a, inputs, meaning).at("R").data,
            evaluate(p.b, inputs, meaning).at("R").data);
  inputs.at("Z") = inputs.at("X");
  EXPECT_EQ(evaluate(p.a, inputs, meaning).at("R").data,
            evaluate(p.b, inputs, meaning).at("R").data);

  EquivalenceOptions options;
  options.seed = seed;
  options.floatScales.clear();
  options.trials = 1;
  options.scaledTwin = false;  // the bound of these very shapes (a twin has fewer applications)
  const EquivalenceReport report = checkEquivalence(p.a, p.b, options);
  EXPECT_FALSE(report.equivalent);
  EXPECT_EQ(report.level, VerificationLevel::FiniteField);
  const DegreeReport degree = differenceDegree(p.a, p.b, seed);
  EXPECT_GT(collisionBound(degree, MaxMeaning::Selection), 0.0);
  EXPECT_DOUBLE_EQ(report.perTrialBound, perTrialBound(degree, MaxMeaning::Selection));
}

TEST(FalseAcceptBound, AFusedRmsNormScheduleChecksInTheFieldWithTheCollisionTerm) {
  const graph::Program program = testing::rmsNormMatmulProgram();
  const graph::KernelGraph schedule = testing::rmsNormMatmulSchedule(program, {});
  EquivalenceOptions options;
  options.seed = std::random_device{}();
  options.floatScales = {0.5};
  options.scaledTwin = false;  // the bound of these very shapes (a twin has fewer applications)
  const EquivalenceReport report = checkEquivalence(program, schedule, options);
  ASSERT_TRUE(report.equivalent) << report.mismatch;
  EXPECT_EQ(report.level, VerificationLevel::FiniteField);
  // Y = Σ_k (x_k / r)·w_k against (Σ_k x_k·w_k) / r, r = sqrt(mean x²) one fresh variable per
  // row: numerator degree 2 over the shared r. The program takes 16 roots, the schedule one per
  // row in each of its 4 blocks, after the loop.
  const DegreeReport degree = differenceDegree(program, schedule, options.seed);
  EXPECT_EQ(report.degree, 2);
  EXPECT_EQ(degree.argumentDegree, 2);
  EXPECT_EQ(degree.applications, 16 + 4 * 16);
  EXPECT_DOUBLE_EQ(report.perTrialBound, 2.0 / kP + collisionBound(degree, MaxMeaning::Selection));
  // 80·79/2 pairs at (4/p)·(4/q) each: ε ≈ 2/p ≈ 4.7e-10, and ε² ≈ 2.2e-19 (keyed on the
  // p-part alone each pair cost 4/p: ε ≈ 2.9e-6, and three trials were needed).
  EXPECT_LT(collisionBound(degree, MaxMeaning::Selection), 1e-14);
  EXPECT_EQ(report.trials, 2);
  EXPECT_LE(report.falseAcceptBound, 1e-12);
}

TEST(FalseAcceptBound, ACheckReportsTheFormulaForItsDegreeAndTrials) {
  const graph::Schedule s =
      graph::loadSchedule(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/gqa_mirage.split_kv.json");
  EquivalenceOptions options;
  options.seed = std::random_device{}();
  options.floatScales = {0.5};
  const EquivalenceReport report = checkEquivalence(s.program, s.graph, options);
  ASSERT_TRUE(report.equivalent) << report.mismatch;
  EXPECT_EQ(report.level, VerificationLevel::FiniteField);
  // GQA: O = Σ_j (e_j / S)·V_j, numerator degree 2 (an exp value times V) over the shared
  // denominator S = Σ_j e_j of degree 1, on both sides.
  EXPECT_EQ(report.degree, 2);
  EXPECT_DOUBLE_EQ(report.perTrialBound, 2.0 / kQ);
  EXPECT_EQ(report.trials, 2);
  EXPECT_DOUBLE_EQ(report.falseAcceptBound, std::pow(2.0 / kQ, 2));
  EXPECT_LE(report.falseAcceptBound, 1e-12);
}

}  // namespace
}  // namespace mugraph::verify
