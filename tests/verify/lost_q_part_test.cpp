// A value that lost its q-part (it went through exp: X·exp(Y)/exp(Y) = X has none) is the same
// real value as X: max's random order sees only its p-part, so schedules that compute a max's
// operand one way or the other agree at every trial seed, while a graph that truly differs is
// still rejected at every seed. Max stays associative, commutative and idempotent on values
// with and without q-part, -inf included. The random functions of sqrt, silu, ... key on the
// whole pair (what gives an LLM MLP a bound): for them the two forms are different arguments,
// a pair of graphs refuted at every seed, never wrongly accepted.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "graph/builder.h"
#include "graph/random_graphs.h"
#include "verify/equivalence.h"
#include "verify/fingerprint.h"
#include "verify/finite_field.h"
#include "verify/interpreter.h"
#include "verify/safe_attention.h"
#include "verify/test_support.h"

namespace mugraph::verify {
namespace {

using graph::DType;
using graph::GraphBuilder;
using graph::OpKind;
using graph::TensorId;
using Field = NumberDomain<FieldElement>;

constexpr int kSeeds = 20;

enum class Operand {
  X,              // X itself, with its q-part
  XWithoutQPart,  // X·exp(Y)/exp(Y): the same real value, no q-part in the field
  Z,              // another input: a truly different graph
};

TensorId operand(GraphBuilder& g, Operand which) {
  if (which == Operand::Z) return 2;
  if (which == Operand::X) return 0;
  const TensorId e = g.op(OpKind::Exp, {1});
  return g.op(OpKind::Div, {g.op(OpKind::Mul, {0, e}), e});
}

// Inputs X, Y, Z [4, 64]; outputs S = sqrt(operand) and M = reduce_max(operand) over dim 1,
// the max whole.
graph::Program sqrtAndMax(Operand which) {
  GraphBuilder g("sqrt_and_max");
  for (const char* name : {"X", "Y", "Z"}) g.input(name, DType::F32, {4, 64});
  const TensorId x = operand(g, which);
  g.output(g.op(OpKind::Sqrt, {x}, {}, "S"));
  g.output(g.op(OpKind::ReduceMax, {x}, testing::reduceAttrs(1), "M"));
  return g.finish();
}

// The same M, split: a block per row, 8 iterations of 8 columns each, accum_max of the tiles'
// maxes. Its max differs from the whole one as a random function of operands, so selection by
// the trial's order decides (safe_attention_test.cpp).
graph::KernelGraph splitMax(Operand which) {
  GraphBuilder b("split_max");
  for (const char* name : {"X", "Y", "Z"}) b.input(name, DType::F32, {4, 64});
  const TensorId x = operand(b, which);
  graph::BlockGraphBuilder block({4, 1, 1}, 128, 8, {b.desc(x)});
  const auto tile = block.input(0, {0, graph::kReplicated, graph::kReplicated}, 1, "x");
  const auto m =
      block.op(OpKind::AccumMax,
               {block.op(OpKind::ReduceMax, {tile}, testing::reduceAttrs(1), "t")}, {}, "m");
  block.output(m, {0, graph::kReplicated, graph::kReplicated});
  b.output(b.blockGraph("max", block.block(), {x}, {{"M", DType::F32}})[0]);
  return b.finish();
}

graph::Program wholeMax() {
  GraphBuilder g("whole_max");
  for (const char* name : {"X", "Y", "Z"}) g.input(name, DType::F32, {4, 64});
  g.output(g.op(OpKind::ReduceMax, {0}, testing::reduceAttrs(1), "M"));
  return g.finish();
}

// Inputs X, Y, Z [4, 64]; output M = reduce_max(operand) over dim 1.
graph::Program maxOf(Operand which) {
  GraphBuilder g("max_of");
  for (const char* name : {"X", "Y", "Z"}) g.input(name, DType::F32, {4, 64});
  g.output(g.op(OpKind::ReduceMax, {operand(g, which)}, testing::reduceAttrs(1), "M"));
  return g.finish();
}

TEST(LostQPart, MaxOfAValueWithoutQPartAgreesWithTheSameValueWithOneAtEverySeed) {
  const uint64_t first = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(first));
  const graph::Program withQPart = maxOf(Operand::X);
  const graph::Program withoutQPart = maxOf(Operand::XWithoutQPart);
  for (uint64_t seed = first; seed < first + kSeeds; ++seed) {
    const EquivalenceReport report =
        checkEquivalence(withQPart, withoutQPart, testing::fingerprintsOnly(seed));
    EXPECT_TRUE(report.equivalent) << "seed " << seed << ": " << report.mismatch;
    EXPECT_EQ(report.level, VerificationLevel::FiniteField);
  }
}

TEST(LostQPart, SqrtOfAValueWithoutQPartIsAnotherArgumentRefutedAtEverySeed) {
  // The price of keying random functions on both parts: a correct pair refuted (the float
  // tests, which the pair passes, are not run here). No schedule the search builds cancels an
  // exp before a random function.
  const uint64_t first = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(first));
  const graph::Program withQPart = sqrtAndMax(Operand::X);
  const graph::Program withoutQPart = sqrtAndMax(Operand::XWithoutQPart);
  for (uint64_t seed = first; seed < first + kSeeds; ++seed) {
    const EquivalenceReport report =
        checkEquivalence(withQPart, withoutQPart, testing::fingerprintsOnly(seed));
    EXPECT_FALSE(report.equivalent) << "seed " << seed;
    EXPECT_NE(report.mismatch.find("output 'S'"), std::string::npos) << report.mismatch;
  }
}

TEST(LostQPart, ASplitMaxOverOperandsWithoutQPartSelectsWhatTheWholeMaxSelectsAtEverySeed) {
  const uint64_t first = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(first));
  const graph::Program program = wholeMax();
  const graph::KernelGraph schedule = splitMax(Operand::XWithoutQPart);
  for (uint64_t seed = first; seed < first + kSeeds; ++seed) {
    const EquivalenceReport report =
        checkEquivalence(program, schedule, testing::fingerprintsOnly(seed));
    EXPECT_TRUE(report.equivalent) << "seed " << seed << ": " << report.mismatch;
    EXPECT_EQ(report.maxMeaning, "selection");
    EXPECT_LE(report.falseAcceptBound, 1e-12);
  }
}

TEST(LostQPart, AGraphThatTrulyDiffersIsRejectedAtEverySeed) {
  const uint64_t first = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(first));
  const graph::Program withQPart = sqrtAndMax(Operand::X);
  const graph::Program mutant = sqrtAndMax(Operand::Z);
  const graph::Program program = wholeMax();
  const graph::KernelGraph splitMutant = splitMax(Operand::Z);
  for (uint64_t seed = first; seed < first + kSeeds; ++seed) {
    EXPECT_FALSE(checkEquivalence(withQPart, mutant, testing::fingerprintsOnly(seed)).equivalent)
        << "seed " << seed;
    const EquivalenceReport split =
        checkEquivalence(program, splitMutant, testing::fingerprintsOnly(seed));
    EXPECT_FALSE(split.equivalent) << "seed " << seed;
    EXPECT_EQ(split.maxMeaning, "selection");
  }
}

// RandomGraphs' program prog_380 (seed 940438052128485560 + 438, drawn from the ops up to
// causal_mask, the generator's set then) once verified at some trial seeds and not at others:
// an operand of its max and uninterpreted ops lost its q-part in one graph only.
TEST(LostQPart, TheRandomScheduleThatFlippedWithTheTrialSeedVerifiesAtEverySeed) {
  const graph::Schedule s =
      mugraph::testing::RandomGraphs(940438052128485560ULL + 438, graph::OpKind::CausalMask)
          .schedule();
  ASSERT_EQ(s.program.name, "prog_380");
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    EquivalenceOptions options = testing::fingerprintsOnly(seed);
    options.scaledTwin = false;
    const EquivalenceReport report = checkEquivalence(s.program, s.graph, options);
    EXPECT_TRUE(report.equivalent) << "seed " << seed << ": " << report.mismatch;
  }
}

// Field values of every kind: with a q-part, without one, several sharing a p-part with
// different q-parts (or none), and -inf.
std::vector<FieldElement> fieldValues(std::mt19937_64& rng) {
  std::vector<FieldElement> values = {Field::negInf()};
  for (int i = 0; i < 6; ++i) {
    const FieldElement v = field::pairFromWord(rng());
    values.push_back(v);
    values.push_back(FieldElement{v.a, FieldElement::kNoQPart});
    values.push_back(FieldElement{v.a, static_cast<uint32_t>((v.b + 1) % FieldParameters::q)});
  }
  return values;
}

TEST(FieldMax, SelectionIsAssociativeCommutativeAndIdempotentWithAndWithoutQPart) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  const TrialMeaning meaning = trialMeaning(seed, false);
  const std::vector<FieldElement> values = fieldValues(rng);
  const auto max = [&](FieldElement x, FieldElement y) { return Field::max(x, y, meaning); };
  for (const FieldElement& x : values) {
    EXPECT_EQ(max(x, x), x);
    EXPECT_EQ(max(x, Field::negInf()), x);
    for (const FieldElement& y : values) {
      EXPECT_EQ(max(x, y), max(y, x));
      // The result's p-part is one operand's: a max never invents a value.
      EXPECT_TRUE(max(x, y).a == x.a || max(x, y).a == y.a);
      for (const FieldElement& z : values) {
        EXPECT_EQ(max(max(x, y), z), max(x, max(y, z)));
      }
    }
  }
}

TEST(FieldMax, OperandsWithOnePPartGiveOneResultWhateverTheirQParts) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  const FieldElement other = field::pairFromWord(rng());
  for (int i = 0; i < 100; ++i) {
    const TrialMeaning meaning = trialMeaning(rng(), false);
    const FieldElement v = field::pairFromWord(rng());
    const FieldElement withoutQPart{v.a, FieldElement::kNoQPart};
    EXPECT_EQ(Field::max(v, other, meaning).a, Field::max(withoutQPart, other, meaning).a);
    EXPECT_EQ(Field::max(v, withoutQPart, meaning), withoutQPart);
    const TrialMeaning arbitrary = trialMeaning(meaning.key, true);
    EXPECT_EQ(Field::max(v, other, arbitrary), Field::max(withoutQPart, other, arbitrary));
  }
}

TEST(FieldRandomFunction, KeysOnTheWholePairSoDistinctQPartsGiveDistinctValues) {
  // sqrt, silu, sigmoid: a random function of both parts (finite_field.h). Equal values agree;
  // a value sharing the p-part but not the q-part (a collision of p-parts, which the bound
  // then no longer pays for alone) and one without a q-part (the same value recomputed through
  // exp) are other arguments, with values drawn apart.
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 100; ++i) {
    const TrialMeaning meaning = trialMeaning(rng(), false);
    const FieldElement v = field::pairFromWord(rng());
    const FieldElement otherQPart{v.a, (v.b + 1) % static_cast<uint32_t>(FieldParameters::q)};
    const FieldElement withoutQPart{v.a, FieldElement::kNoQPart};
    const auto f = [&](FieldElement x) { return Field::uninterpreted(OpKind::Silu, x, meaning); };
    EXPECT_EQ(f(v), f(FieldElement{v.a, v.b}));
    EXPECT_NE(f(v), f(otherQPart));
    EXPECT_NE(f(v), f(withoutQPart));
    EXPECT_NE(f(otherQPart), f(withoutQPart));
    // One function per op kind.
    EXPECT_NE(f(v), Field::uninterpreted(OpKind::Sqrt, v, meaning));
  }
}

}  // namespace
}  // namespace mugraph::verify
