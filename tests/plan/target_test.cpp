// The target records: lookup by --arch spelling, clear errors, and the occupancy arithmetic
// the planner and the cost model use.
#include <gtest/gtest.h>

#include "graph/error.h"
#include "plan/target.h"

namespace mugraph::plan {
namespace {

TEST(Target, LooksUpEveryTargetByItsName) {
  ASSERT_GE(allTargets().size(), 2u);
  for (const Target& target : allTargets()) {
    EXPECT_EQ(&targetByName(target.name), &target);
    EXPECT_EQ(target.name, "sm_" + std::to_string(target.computeCapability));
    EXPECT_GT(target.streamingMultiprocessors, 0);
    EXPECT_LE(target.sharedBytesPerBlock, target.sharedBytesPerSm);
    EXPECT_GT(target.maxPipelineStages, 2);
  }
  EXPECT_EQ(targetByName("sm_90").streamingMultiprocessors, 132);
  EXPECT_EQ(targetByName("sm_80").streamingMultiprocessors, 108);
}

TEST(Target, AnUnknownNameIsAUserErrorThatListsTheKnownOnes) {
  try {
    targetByName("sm_70", "--arch");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where(), "--arch");
    EXPECT_NE(e.reason().find("sm_70"), std::string::npos);
    EXPECT_NE(e.reason().find("sm_80, sm_90"), std::string::npos);
  }
  EXPECT_THROW(parseTargetList(""), UserError);
  EXPECT_THROW(parseTargetList("sm_90,bogus"), UserError);
}

TEST(Target, ListsKeepTheGivenOrderWithoutRepeats) {
  const std::vector<const Target*> targets = parseTargetList("sm_90,sm_80,sm_90");
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[0]->name, "sm_90");
  EXPECT_EQ(targets[1]->name, "sm_80");
}

TEST(Target, SharedMemoryForSeveralBlocksLeavesEachBlocksReservation) {
  const Target& h100 = targetByName("sm_90");
  EXPECT_EQ(h100.sharedBytesForBlocksPerSm(1), 227 * 1024);  // capped by the per-block limit
  EXPECT_EQ(h100.sharedBytesForBlocksPerSm(2), 113 * 1024);
  const Target& a100 = targetByName("sm_80");
  EXPECT_EQ(a100.sharedBytesForBlocksPerSm(2), 81 * 1024);
  for (const Target& target : allTargets()) {
    for (int blocks = 1; blocks <= 8; ++blocks) {
      const int64_t each = target.sharedBytesForBlocksPerSm(blocks);
      EXPECT_GE(target.blocksPerSmByShared(each), blocks) << target.name << " x" << blocks;
    }
    EXPECT_EQ(target.blocksPerSmByShared(target.sharedBytesPerBlock), 1);
  }
}

}  // namespace
}  // namespace mugraph::plan
