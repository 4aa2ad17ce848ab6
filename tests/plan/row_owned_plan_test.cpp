// Which block graphs take the row-owned path (plan/paths/row_owned_plan.h) and with what
// chunks: rows of a hidden size with a residual, RMSNorm and a row sum; RoPE of query and key
// heads in one kernel; and the graphs it leaves to the general path.
#include <gtest/gtest.h>

#include "plan/kernel_plan.h"
#include "plan/target.h"
#include "tests/plan/plan_test_support.h"
#include "tests/plan/row_owned_schedules.h"

namespace mugraph::plan {
namespace {

using testing::testTarget;

TEST(RowOwnedPlan, ResidualRmsNormRowsAreOwnedByWarpsInSixteenByteChunks) {
  for (int64_t hidden : {256, 2048}) {
    const graph::Schedule schedule = testing::residualRmsNorm(hidden, 4);
    const KernelPlan plan = planKernel(schedule.graph, 0, testTarget());
    const RowOwnedPlan* rows = plan.as<RowOwnedPlan>();
    ASSERT_NE(rows, nullptr) << hidden;
    EXPECT_EQ(plan.sharedBytes, 0);
    EXPECT_EQ(rows->rows, 4);
    EXPECT_EQ(rows->warps, 4);
    EXPECT_EQ(rows->rowsPerWarp(), 1);
    EXPECT_EQ(rows->perLane, hidden / 32);
    EXPECT_EQ(rows->vector, 8);  // 16 bytes of f16
  }
  // Eight rows over four warps: two each.
  EXPECT_EQ(planKernel(testing::residualRmsNorm(256, 8).graph, 0, testTarget())
                .as<RowOwnedPlan>()
                ->rowsPerWarp(),
            2);
}

TEST(RowOwnedPlan, RopeKeepsEachRotatedPairInOneLane) {
  // d = 64: two elements a lane, each its own chunk, so the halves are chunks 0 and 1.
  const KernelPlan d64 = planKernel(testing::gqaRope(64).graph, 0, testTarget());
  ASSERT_NE(d64.as<RowOwnedPlan>(), nullptr);
  EXPECT_EQ(d64.as<RowOwnedPlan>()->perLane, 2);
  EXPECT_EQ(d64.as<RowOwnedPlan>()->vector, 1);
  EXPECT_EQ(d64.as<RowOwnedPlan>()->rows, 8);  // the query heads; the key heads are fewer
  // d = 128: four a lane in two chunks of two.
  const KernelPlan d128 = planKernel(testing::gqaRope(128).graph, 0, testTarget());
  ASSERT_NE(d128.as<RowOwnedPlan>(), nullptr);
  EXPECT_EQ(d128.as<RowOwnedPlan>()->perLane, 4);
  EXPECT_EQ(d128.as<RowOwnedPlan>()->vector, 2);
  EXPECT_EQ(d128.sharedBytes, 0);
}

TEST(RowOwnedPlan, InterleavedRopeKeepsEachPairInOneChunk) {
  // rotate_pairs pairs columns 2i and 2i + 1: an even vector holds both in one lane's chunk.
  const KernelPlan d64 =
      planKernel(testing::gqaRope(64, graph::OpKind::RotatePairs).graph, 0, testTarget());
  ASSERT_NE(d64.as<RowOwnedPlan>(), nullptr);
  EXPECT_EQ(d64.as<RowOwnedPlan>()->perLane, 2);
  EXPECT_EQ(d64.as<RowOwnedPlan>()->vector, 2);
  const KernelPlan d128 =
      planKernel(testing::gqaRope(128, graph::OpKind::RotatePairs).graph, 0, testTarget());
  ASSERT_NE(d128.as<RowOwnedPlan>(), nullptr);
  EXPECT_EQ(d128.as<RowOwnedPlan>()->perLane, 4);
  EXPECT_EQ(d128.as<RowOwnedPlan>()->vector, 4);
  EXPECT_EQ(d128.sharedBytes, 0);
}

TEST(RowOwnedPlan, LongRowsRaggedRowsAndColumnSumsStayOnTheGeneralPath) {
  // 4096 elements a row would be 128 registers per live tile and lane.
  EXPECT_EQ(planKernel(testing::residualRmsNorm(4096, 1).graph, 0, testTarget()).as<RowOwnedPlan>(),
            nullptr);
  // Sixteen rows a warp, one after another: the general path loads the tile at once.
  EXPECT_EQ(planKernel(testing::residualRmsNorm(256, 64).graph, 0, testTarget()).as<RowOwnedPlan>(),
            nullptr);
  // A row of 48 does not split over 32 lanes.
  EXPECT_EQ(planKernel(testing::residualRmsNorm(48, 4).graph, 0, testTarget()).as<RowOwnedPlan>(),
            nullptr);
  // A reduction along a dim that is not the row: the general path.
  using graph::DType;
  using graph::OpKind;
  graph::OpAttrs columns;
  columns.dim = 0;
  graph::GraphBuilder program("column_sum");
  const graph::TensorId x = program.input("X", DType::F16, {64, 256});
  program.output(program.op(OpKind::ReduceSum, {x}, columns, "S"));
  graph::Schedule schedule;
  schedule.name = "column_sum.block";
  schedule.program = program.finish();
  graph::BlockGraphBuilder block({4, 1, 1}, 128, 1, {schedule.program.tensors[0]});
  const graph::TensorId xt = block.input(0, {1, -1, -1}, -1, "x");
  block.output(block.op(OpKind::ReduceSum, {xt}, columns, "s"), {1, -1, -1});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  graph.output(graph.blockGraph("columns", block.block(), {0}, {{"S", DType::F16}})[0]);
  schedule.graph = graph.finish();
  graph::validateSchedule(schedule);
  const KernelPlan plan = planKernel(schedule.graph, 0, testTarget());
  EXPECT_EQ(plan.as<RowOwnedPlan>(), nullptr);
  EXPECT_NE(plan.as<GeneralPlan>(), nullptr);
  EXPECT_GT(plan.sharedBytes, 0);
}

}  // namespace
}  // namespace mugraph::plan
