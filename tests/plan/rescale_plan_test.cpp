// How rescaling accumulators are planned (tests/plan/rescale_schedules.h): attention's output
// accumulator is rescaled in mma registers in place, each running max read by a rescaled sum
// gets one f32 factor array that shares no bytes with what is live while it is, a rescaled
// sum is folded only into an op that runs after its max is updated, and a running max read
// inside the loop stays in shared memory even behind a tensor-core matmul.
#include <gtest/gtest.h>

#include "plan/kernel_plan.h"
#include "plan/target.h"
#include "tests/plan/plan_test_support.h"
#include "tests/plan/rescale_schedules.h"

namespace mugraph::plan {
namespace {

using testing::testTarget;

graph::TensorId tileNamed(const KernelPlan& plan, const std::string& name) {
  for (size_t t = 0; t < plan.block->tensors.size(); ++t) {
    if (plan.block->tensors[t].name == name) return static_cast<graph::TensorId>(t);
  }
  throw std::out_of_range("no tile " + name);
}

bool sharesBytes(const SharedTile& a, const SharedTile& b) {
  return a.offset < b.offset + b.bytes * b.buffers && b.offset < a.offset + a.bytes * a.buffers;
}

TEST(RescalePlan, AttentionRescalesItsOutputInMmaRegistersInPlace) {
  const graph::Schedule schedule = testing::onlineAttention(graph::DType::F16);
  const KernelPlan plan = planKernel(schedule.graph, 0, testTarget());
  const GeneralPlan& general = std::get<GeneralPlan>(plan.path);
  const graph::TensorId m = tileNamed(plan, "m");
  const graph::TensorId o = tileNamed(plan, "o");
  const graph::TensorId l = tileNamed(plan, "l");
  const int ev = plan.producer[tileNamed(plan, "ev")];
  ASSERT_TRUE(general.ops[ev].mma);
  EXPECT_TRUE(general.ops[ev].accumulateInPlace);
  EXPECT_EQ(general.home[o], TileHome::Registers);
  // The row sum l is folded into the reduce_sum that feeds it, in shared memory; the max into
  // the reduce_max.
  EXPECT_EQ(general.emitter[l], plan.producer[tileNamed(plan, "tile_l")]);
  EXPECT_EQ(general.home[l], TileHome::Shared);
  EXPECT_EQ(general.emitter[m], plan.producer[tileNamed(plan, "tile_max")]);
  EXPECT_EQ(general.home[m], TileHome::Shared);

  int factors = 0;
  for (const std::optional<SharedTile>& factor : general.rescaleFactors) factors += factor ? 1 : 0;
  EXPECT_EQ(factors, 1);
  ASSERT_TRUE(general.rescaleFactors[m]);
  const SharedTile& factor = *general.rescaleFactors[m];
  EXPECT_EQ(factor.dtype, graph::DType::F32);
  EXPECT_EQ(factor.extent, general.shared[m].extent);
  EXPECT_LE(factor.offset + factor.bytes, plan.sharedBytes);
  // Live from the max's update to the P·V matmul: everything read or written in between, and
  // every tile kept across iterations, has its own bytes.
  for (const char* name : {"a", "m", "shifted", "e", "l", "k", "v", "q"}) {
    EXPECT_FALSE(sharesBytes(factor, general.shared[tileNamed(plan, name)])) << name;
  }
}

TEST(RescalePlan, ARescaledSumIsFoldedOnlyIntoAnOpAfterItsMaxUpdate) {
  const graph::Schedule schedule = testing::earlySumRescaleSchedule();
  const KernelPlan plan = planKernel(schedule.graph, 0, testTarget());
  const GeneralPlan& general = std::get<GeneralPlan>(plan.path);
  const graph::TensorId s = tileNamed(plan, "s");
  const graph::TensorId l = tileNamed(plan, "l");
  const graph::TensorId m = tileNamed(plan, "m");
  // s is computed before the max's update, which writes this iteration's factor: l runs as
  // its own op after it, reading s from shared memory.
  EXPECT_TRUE(general.ops[plan.producer[l]].emitted);
  EXPECT_EQ(general.emitter[l], plan.producer[l]);
  EXPECT_EQ(general.home[s], TileHome::Shared);
  EXPECT_LT(general.emitter[m], plan.producer[l]);
  EXPECT_TRUE(general.rescaleFactors[m]);
}

TEST(RescalePlan, ARunningMaxReadInTheLoopStaysInSharedMemoryBehindAMatmul) {
  const graph::Schedule schedule = testing::elementwiseMaxRescaleSchedule();
  const KernelPlan plan = planKernel(schedule.graph, 0, testTarget());
  const GeneralPlan& general = std::get<GeneralPlan>(plan.path);
  const graph::TensorId m = tileNamed(plan, "m");
  const int a = plan.producer[tileNamed(plan, "a")];
  ASSERT_TRUE(general.ops[a].mma);
  EXPECT_EQ(general.emitter[m], a);
  EXPECT_EQ(general.home[m], TileHome::Shared);
  EXPECT_TRUE(general.rescaleFactors[m]);
  EXPECT_EQ(general.home[tileNamed(plan, "o")], TileHome::Registers);
}

TEST(RescalePlan, RunningOpsRunInTheLoopAndPostLoopOpsAfterIt) {
  const graph::Schedule schedule = testing::splitKvAttention(graph::DType::F32);
  const KernelPlan combine = planKernel(schedule.graph, 1, testTarget());
  EXPECT_TRUE(runsInLoop(combine, combine.producer[tileNamed(combine, "m")]));
  EXPECT_TRUE(runsInLoop(combine, combine.producer[tileNamed(combine, "f")]));
  EXPECT_TRUE(runsInLoop(combine, combine.producer[tileNamed(combine, "o")]));
  EXPECT_FALSE(runsInLoop(combine, combine.producer[tileNamed(combine, "out")]));
}

}  // namespace
}  // namespace mugraph::plan
