// The warpgroup emitters retype no number the plan or the target decided: shipped warpgroup
// schedules planned for a target whose wgmma limits differ from any real GPU's (warpgroups of
// eight warps, a 2048-byte swizzle period, 4 KiB of staging per warp) must emit code that
// follows every one of them, and none of the sm_90 values may be left in it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/device_header.h"
#include "codegen/emit/kernel.h"
#include "graph/files.h"
#include "plan/schedule_plan.h"

namespace mugraph::codegen {
namespace {

plan::Target alteredTarget() {
  plan::Target target = plan::targetByName("sm_90");
  target.warpgroup.threads *= 2;
  target.warpgroup.swizzleAlignment *= 2;
  target.warpgroup.stagingBytesPerWarp *= 2;
  target.registersPerSm *= 2;  // the same register budgets for warpgroups twice as large
  return target;
}

// A shipped schedule with twice the threads per block: the same warpgroup count under the
// altered target.
graph::Schedule withDoubledThreads(const std::string& name) {
  graph::Schedule schedule =
      graph::loadSchedule(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/" + name + ".json");
  for (graph::KernelOp& op : schedule.graph.ops) {
    if (op.block) op.block->threads *= 2;
  }
  return schedule;
}

void expectFollows(const std::string& code, const plan::WarpgroupRing& ring) {
  for (const std::string& expected :
       {std::string("__align__(2048) unsigned char mg_smem_raw"),
        std::string("+ 2047ull) & ~2047ull"),
        std::string("const int warpgroup = threadIdx.x / 256;"),
        std::string("& 7;  // within the warpgroup"),
        "ring.init(" + std::to_string(ring.consumers * 8) + ");",
        std::string(" + warp) * 4096;"), std::string(", 2048)")}) {
    EXPECT_NE(code.find(expected), std::string::npos) << expected;
  }
  for (const char* retyped : {"__align__(1024)", "1023ull", "threadIdx.x / 128",
                              "& 3;  // within the warpgroup", "* 2048;", ", 1024)"}) {
    EXPECT_EQ(code.find(retyped), std::string::npos) << retyped;
  }
}

TEST(WarpgroupConstants, TheGemmEmitterPrintsTheTargetsLimits) {
  const plan::Target target = alteredTarget();
  const plan::SchedulePlan planned =
      plan::planSchedule(withDoubledThreads("gemm_4096.warpgroups"), target);
  const plan::WarpgroupMmaPlan* gemm = planned.kernels.at(0).as<plan::WarpgroupMmaPlan>();
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->limits.swizzleAlignment, 2048);
  EXPECT_EQ(gemm->b.offset % 2048, 0);
  EXPECT_EQ(gemm->stageBytes % 2048, 0);
  expectFollows(emitSchedule(planned).source, *gemm);
}

TEST(WarpgroupConstants, TheAttentionEmitterPrintsTheTargetsLimits) {
  const plan::Target target = alteredTarget();
  const plan::SchedulePlan planned =
      plan::planSchedule(withDoubledThreads("mha_prefill_2048.warpgroups"), target);
  const plan::WarpgroupAttentionPlan* attention =
      planned.kernels.at(0).as<plan::WarpgroupAttentionPlan>();
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(attention->stagesOffset % 2048, 0);
  expectFollows(emitSchedule(planned).source, *attention);
}

}  // namespace
}  // namespace mugraph::codegen

namespace mugraph::codegen {
namespace {

// Every wgmma width the plan accepts (plan::kWgmmaWidths) has its wrappers in the device
// library the kernels include (generated from codegen/device/generate_wgmma.cmake).
TEST(WarpgroupConstants, EveryWgmmaWidthThePlanAcceptsHasItsWrappers) {
  std::string library;
  for (const DeviceHeader& header : deviceHeaders()) library += header.source;
  for (int64_t width : plan::kWgmmaWidths) {
    for (const std::string suffix : {"k16(", "k16_rs("}) {
      const std::string name = "void wgmma_m64n" + std::to_string(width) + suffix;
      EXPECT_NE(library.find(name), std::string::npos) << name;
    }
  }
}

}  // namespace
}  // namespace mugraph::codegen
