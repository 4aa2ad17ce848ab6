// Safe attention through the rescaling accumulator: the interpreter's online and split-KV
// schedules equal the program on inputs of real models' spread, fingerprints verify them
// with max as an arbitrary function (bound ≤ 1e-12), and every rescaling mistake is
// rejected by fingerprints alone.
#include <gtest/gtest.h>

#include "tests/verify/safe_attention.h"
#include "tests/verify/test_support.h"
#include "verify/equivalence.h"
#include "verify/interpreter.h"

namespace mugraph::verify {
namespace {

using testing::RescaleMistake;

TEST(SafeAttention, OnlineAndSplitSchedulesEqualTheProgramAtEveryLogitSpread) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const graph::Program program = testing::safeAttentionProgram(2, 4, 8, 64);
  for (double spread : {1.0, 4.0, 8.0, 16.0}) {
    SCOPED_TRACE("logit std " + std::to_string(spread));
    const TensorMap<double> inputs = testing::attentionInputs(program, spread, seed);
    const std::vector<double> expected = evaluate(program, inputs).at("O").data;
    for (const graph::KernelGraph& schedule :
         {testing::onlineSoftmaxSchedule(program, 4), testing::onlineSoftmaxSchedule(program, 8),
          testing::splitKvSchedule(program, 2, 4), testing::splitKvSchedule(program, 4, 2)}) {
      const std::vector<double> got = evaluate(schedule, inputs).at("O").data;
      for (double x : got) ASSERT_TRUE(std::isfinite(x));
      EXPECT_LT(testing::normwiseError(got, expected), 1e-12) << schedule.name;
    }
  }
}

TEST(SafeAttention, FingerprintsVerifyRescalingForEveryMeaningOfMax) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const graph::Program program = testing::safeAttentionProgram(2, 4, 8, 64);
  for (const graph::KernelGraph& schedule :
       {testing::onlineSoftmaxSchedule(program, 4), testing::splitKvSchedule(program, 4, 2)}) {
    const EquivalenceReport report =
        checkEquivalence(program, schedule, testing::fingerprintsOnly(seed));
    EXPECT_TRUE(report.equivalent) << schedule.name << ": " << report.mismatch;
    EXPECT_EQ(report.level, VerificationLevel::FiniteField);
    EXPECT_EQ(report.maxMeaning, "any");
    EXPECT_LE(report.falseAcceptBound, 1e-12);
    EXPECT_GT(report.degree, 0);
  }
}

TEST(SafeAttention, SafeAndUnsafeSoftmaxAreTheSameFunction) {
  // Mirage's program (no max) and the safe one agree exactly in the field: the shift cancels.
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const graph::Program safe = testing::safeAttentionProgram(1, 4, 8, 32);
  graph::GraphBuilder b("unsafe_attention");
  const auto q = b.input("Q", graph::DType::F32, {1, 4, 8});
  const auto k = b.input("K", graph::DType::F32, {1, 8, 32});
  const auto v = b.input("V", graph::DType::F32, {1, 32, 8});
  const auto e = b.op(graph::OpKind::Exp, {b.op(graph::OpKind::Matmul, {q, k})}, {}, "E");
  const auto l = b.op(graph::OpKind::ReduceSum, {e}, testing::reduceAttrs(2), "L");
  b.output(b.op(graph::OpKind::Div, {b.op(graph::OpKind::Matmul, {e, v}), l}, {}, "O"));
  const EquivalenceReport report =
      checkEquivalence(safe, b.finish(), testing::fingerprintsOnly(seed));
  EXPECT_TRUE(report.equivalent) << report.mismatch;
  EXPECT_EQ(report.maxMeaning, "any");
}

TEST(SafeAttention, EveryRescalingMistakeIsRejectedByFingerprintsAlone) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const graph::Program program = testing::safeAttentionProgram(2, 4, 8, 64);
  const std::vector<std::pair<std::string, graph::KernelGraph>> mutants = {
      {"online: missing rescale",
       testing::onlineSoftmaxSchedule(program, 4, RescaleMistake::MissingRescale)},
      {"online: max over the tile, not the running max",
       testing::onlineSoftmaxSchedule(program, 4, RescaleMistake::TileMax)},
      {"split: unscaled combine",
       testing::splitKvSchedule(program, 4, 2, RescaleMistake::UnscaledCombine)},
      {"split: partial carries the wrong max",
       testing::splitKvSchedule(program, 4, 2, RescaleMistake::WrongPartialMax)},
  };
  for (const auto& [name, mutant] : mutants) {
    const EquivalenceReport report =
        checkEquivalence(program, mutant, testing::fingerprintsOnly(seed));
    EXPECT_FALSE(report.equivalent) << name;
    EXPECT_EQ(report.level, VerificationLevel::FiniteField) << name;
    // Refuted with max as a free function: the program's outputs do not depend on it, the
    // mutant's do. Selection would pass each trial whose order happened to suit the mutant.
    EXPECT_EQ(report.maxMeaning, "any") << name;
    EXPECT_NE(report.mismatch.find("does not cancel"), std::string::npos)
        << name << ": " << report.mismatch;
  }
}

// The mistake of a loop whose last tile holds one key: with max as selection it shows only
// where that key is some row's max, so selection trials passed it now and then (about 3% of
// seeds at 4 rows, 64 + 1 keys). Decided with max as a free function, it fails at every seed.
TEST(SafeAttention, AMissingRescaleWithOneKeyInTheLastTileFailsAtEverySeed) {
  const graph::Program program = testing::safeAttentionProgram(2, 4, 8, 65);
  const graph::KernelGraph mutant =
      testing::onlineSoftmaxSchedule(program, 2, RescaleMistake::MissingRescale, 64);
  const graph::KernelGraph right =
      testing::onlineSoftmaxSchedule(program, 2, RescaleMistake::None, 64);
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(testing::seedTrace(seed));
    const EquivalenceReport wrong =
        checkEquivalence(program, mutant, testing::fingerprintsOnly(seed));
    EXPECT_FALSE(wrong.equivalent);
    const EquivalenceReport report = checkEquivalence(program, right, testing::fingerprintsOnly(seed));
    EXPECT_TRUE(report.equivalent) << report.mismatch;
  }
}

TEST(SafeAttention, ASplitMaxSelectsExactlyWhatTheWholeMaxSelects) {
  // Outputs that are the max itself depend on what max returns: decided by selection.
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const graph::Program program =
      testing::oneOpProgram(graph::OpKind::ReduceMax, {{4, 64}}, testing::reduceAttrs(1));
  auto b = graph::GraphBuilder::withInputsOf(program, "split_max");
  graph::BlockGraphBuilder block({4, 1, 1}, 128, 8, {b.desc(0)});
  const auto x = block.input(0, {0, graph::kReplicated, graph::kReplicated}, 1, "x");
  const auto m =
      block.op(graph::OpKind::AccumMax,
               {block.op(graph::OpKind::ReduceMax, {x}, testing::reduceAttrs(1), "t")}, {}, "m");
  block.output(m, {0, graph::kReplicated, graph::kReplicated});
  b.output(b.blockGraph("max", block.block(), {0}, {{"out", graph::DType::F32}})[0]);
  const EquivalenceReport report =
      checkEquivalence(program, b.finish(), testing::fingerprintsOnly(seed));
  EXPECT_TRUE(report.equivalent) << report.mismatch;
  EXPECT_EQ(report.level, VerificationLevel::FiniteField);
  EXPECT_EQ(report.maxMeaning, "selection");
  EXPECT_LE(report.falseAcceptBound, 1e-12);
}

}  // namespace
}  // namespace mugraph::verify
