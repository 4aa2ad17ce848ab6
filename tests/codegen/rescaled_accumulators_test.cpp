// Rescaling accumulators, emulated (tests/plan/rescale_schedules.h): safe attention's
// one-kernel online softmax and its split-KV partials + combine, in f16 with tiles that put
// Q·K and the rescaled P·V on tensor cores (the running max and its factor in shared memory,
// the output accumulator rescaled in mma registers) and in f32 through the general path.
// Logits have standard deviation 16, so a tile weighed with a stale max is off by exp of the
// difference of two maxes, several units at this spread: a missing rescale, a factor read
// before it is written, or a max overwritten while still read shows up as a mismatch. Small
// graphs cover what attention does not: maxes that vary along the rescaled fragments'
// columns (one of them updated in a matmul's epilogue), and a rescaled sum whose input is
// computed before its max is updated.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "emulated_kernels.h"
#include "tests/plan/rescale_schedules.h"

namespace mugraph::codegen::testing {
namespace {

using plan::testing::attentionProgram;
using plan::testing::onlineAttention;
using plan::testing::splitKvAttention;
using verify::testing::attentionInputs;

inline constexpr double kLogitStd = 16.0;

class RescalingEmulated : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kCanEmulate) GTEST_SKIP() << "the CUDA emulation switches contexts on x86-64 only";
  }
};

class AttentionEmulated : public ::testing::WithParamInterface<graph::DType>,
                          public RescalingEmulated {};

TEST_P(AttentionEmulated, OneKernelOverFourKvTilesMatchesTheInterpreter) {
  expectMatchesInterpreter(onlineAttention(GetParam()),
                           attentionInputs(attentionProgram(GetParam()), kLogitStd, 31));
}

TEST_P(AttentionEmulated, SplitKvPartialsAndTheirRescalingCombineMatchTheInterpreter) {
  expectMatchesInterpreter(splitKvAttention(GetParam()),
                           attentionInputs(attentionProgram(GetParam()), kLogitStd, 32));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AttentionEmulated,
                         ::testing::Values(graph::DType::F16, graph::DType::F32),
                         [](const ::testing::TestParamInfo<graph::DType>& info) {
                           return std::string(graph::dtypeName(info.param));
                         });

TEST_F(RescalingEmulated, ARegisterAccumulatorRescaledByAColumnMaxMatchesTheInterpreter) {
  expectMatchesInterpreter(plan::testing::columnMaxRescaleSchedule(), 33, 1.0);
}

TEST_F(RescalingEmulated, AMaxUpdatedInAMatmulEpilogueAndReadInTheLoopMatchesTheInterpreter) {
  expectMatchesInterpreter(plan::testing::elementwiseMaxRescaleSchedule(), 35, 1.0);
}

// Inputs of scale 4 make consecutive running maxes differ by whole units, so a factor of the
// wrong iteration is visible.
TEST_F(RescalingEmulated, ARescaledSumOfATileComputedBeforeItsMaxMatchesTheInterpreter) {
  expectMatchesInterpreter(plan::testing::earlySumRescaleSchedule(), 34, 4.0);
}

// The emulation builds kernel.cu with the host compiler; NVRTC and ptxas must take it too,
// without spilling the register accumulators.
TEST(RescalingSchedules, CompileAndAssembleWithoutSpills) {
  const std::vector<std::function<graph::Schedule()>> schedules = {
      [] { return onlineAttention(graph::DType::F16); },
      [] { return splitKvAttention(graph::DType::F16); },
      [] { return onlineAttention(graph::DType::F32); },
      plan::testing::columnMaxRescaleSchedule,
      plan::testing::elementwiseMaxRescaleSchedule,
      plan::testing::earlySumRescaleSchedule,
  };
  for (const auto& make : schedules) {
    const graph::Schedule schedule = make();
    SCOPED_TRACE(schedule.name);
    const GeneratedCode& code = compiledOnce(schedule.name, [&] { return schedule; });
    ASSERT_EQ(code.resources.size(), code.emitted.kernels.size());
    for (const KernelResources& r : code.resources) {
      SCOPED_TRACE(r.entry);
      EXPECT_GT(r.registers, 0);
      EXPECT_EQ(r.spillStoreBytes, 0);
      EXPECT_EQ(r.spillLoadBytes, 0);
      EXPECT_EQ(r.localBytes, 0);
    }
  }
}

}  // namespace
}  // namespace mugraph::codegen::testing
