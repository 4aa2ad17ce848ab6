// How memory-bound block graphs are planned: a matmul of fewer than 16 rows still runs on
// tensor cores, padded to one fragment row (A read row by row, so the padding repeats its
// last row), and a block graph of element-wise ops and accumulators whose tiles broadcast to
// one extent runs as thread-owned elements, with no shared memory at all.
#include <gtest/gtest.h>

#include "graph/files.h"
#include "plan/kernel_plan.h"
#include "plan/target.h"
#include "tests/plan/memory_bound_schedules.h"
#include "tests/plan/plan_test_support.h"

namespace mugraph::plan {
namespace {

using testing::testTarget;

std::vector<MmaPlan> mmaPlans(const KernelPlan& plan) {
  std::vector<MmaPlan> found;
  if (const GeneralPlan* general = plan.as<GeneralPlan>()) {
    for (const OpPlan& op : general->ops) {
      if (op.mma) found.push_back(*op.mma);
    }
  }
  return found;
}

TEST(MemoryBoundPlan, MatmulsOfFewRowsArePaddedToOneTensorCoreFragmentRow) {
  for (int64_t rows : {1, 4, 8, 16}) {
    for (graph::DType dtype : {graph::DType::F16, graph::DType::BF16}) {
      const graph::Schedule schedule = testing::smallRowMatmul(rows, dtype);
      const KernelPlan plan = planKernel(schedule.graph, 0, testTarget());
      const std::vector<MmaPlan> mma = mmaPlans(plan);
      ASSERT_EQ(mma.size(), 1u) << schedule.name;
      EXPECT_EQ(mma[0].rows, rows);
      EXPECT_EQ(mma[0].padded(), rows < 16);
      EXPECT_EQ(mma[0].warpsM * mma[0].mi * 16, 16);
      EXPECT_FALSE(mma[0].aStoredKM);
    }
  }
  // In f32 there is no tensor-core path, padded or not.
  const graph::Schedule f32 = testing::smallRowMatmul(4, graph::DType::F32);
  EXPECT_TRUE(mmaPlans(planKernel(f32.graph, 0, testTarget())).empty());
}

TEST(MemoryBoundPlan, DecodeRunsBothMatmulsOnTensorCoresAndCombinesInRegisters) {
  const graph::Schedule schedule = graph::loadSchedule(std::string(MUGRAPH_SOURCE_DIR) +
                                                       "/schedules/gqa_decode_4k.split_kv.json");
  const KernelPlan partial = planKernel(schedule.graph, 0, testTarget());
  const std::vector<MmaPlan> mma = mmaPlans(partial);
  ASSERT_EQ(mma.size(), 2u);  // Q·K and exp·V, 4 query rows each
  for (const MmaPlan& plan : mma) EXPECT_EQ(plan.rows, 4);
  EXPECT_FALSE(partial.as<ThreadOwnedPlan>());
  EXPECT_GT(partial.sharedBytes, 0);

  const KernelPlan combine = planKernel(schedule.graph, 1, testTarget());
  ASSERT_TRUE(combine.as<ThreadOwnedPlan>());
  EXPECT_EQ(combine.sharedBytes, 0);
  // One row of 128 values per block: one element per thread; the partials' sums and maxes
  // ([1, 1, 1] tiles) broadcast to it.
  EXPECT_EQ(combine.as<ThreadOwnedPlan>()->elements, 128);
  EXPECT_EQ(combine.as<ThreadOwnedPlan>()->perThread, 1);
}

// One 16 x 16 block of the product per block and 8 warps: each multiplies an eighth of K, and
// the 7 other warps' sums meet in shared memory that no tile live at the same time uses.
TEST(MemoryBoundPlan, WarpsLeftIdleByANarrowTileSplitK) {
  for (int64_t forloop : {1, 2}) {
    const graph::Schedule schedule = testing::narrowMatmul(1, graph::DType::F16, forloop);
    const KernelPlan plan = planKernel(schedule.graph, 0, testTarget());
    const std::vector<MmaPlan> mma = mmaPlans(plan);
    ASSERT_EQ(mma.size(), 1u) << schedule.name;
    EXPECT_EQ(mma[0].warpsMN(), 1) << schedule.name;
    EXPECT_EQ(mma[0].warpsK, 8) << schedule.name;
    EXPECT_EQ(mma[0].k / mma[0].warpsK, 512 / forloop / 8) << schedule.name;
    EXPECT_EQ(mma[0].scratchBytes(), 7 * 32 * mma[0].fragments() * 4) << schedule.name;
    EXPECT_LE(mma[0].scratchOffset + mma[0].scratchBytes(), plan.sharedBytes) << schedule.name;
    const GeneralPlan& general = *plan.as<GeneralPlan>();
    for (size_t t = 0; t < general.shared.size(); ++t) {
      if (general.home[t] != TileHome::Shared) continue;
      const SharedTile& tile = general.shared[t];
      const bool disjoint = tile.offset + tile.bytes * tile.buffers <= mma[0].scratchOffset ||
                            mma[0].scratchOffset + mma[0].scratchBytes() <= tile.offset;
      EXPECT_TRUE(disjoint) << schedule.name << ": tile " << t;
    }
  }
  // Where the warps already cover the tile's blocks, nothing splits.
  EXPECT_EQ(
      mmaPlans(planKernel(testing::smallRowMatmul(1, graph::DType::F16).graph, 0, testTarget()))[0]
          .warpsK,
      1);
}

TEST(MemoryBoundPlan, AMatmulOrAReductionKeepsTheSharedMemoryPath) {
  const graph::Schedule schedule = testing::smallRowMatmul(4, graph::DType::F16);
  EXPECT_FALSE(planKernel(schedule.graph, 0, testTarget()).as<ThreadOwnedPlan>());
}

}  // namespace
}  // namespace mugraph::plan
