// The ptxas -v report NVRTC returns is read per entry: registers, spills, stack, shared memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "codegen/emit/kernel.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/ptxas_report.h"
#include "graph/files.h"
#include "plan/schedule_plan.h"
#include "plan/target.h"

namespace mugraph::codegen {
namespace {

TEST(PtxasReport, ReadsEachEntry) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'mugraph_k0_a' for 'sm_90'\n"
      "ptxas info    : Function properties for mugraph_k0_a\n"
      "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'mugraph_k1_b' for 'sm_90'\n"
      "ptxas info    : Function properties for mugraph_k1_b\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 0 barriers\n";
  const std::vector<KernelResources> entries = parsePtxasReport(log);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].entry, "mugraph_k0_a");
  EXPECT_EQ(entries[0].registers, 255);
  EXPECT_EQ(entries[0].spillStoreBytes, 8);
  EXPECT_EQ(entries[0].spillLoadBytes, 4);
  EXPECT_EQ(entries[0].localBytes, 16);
  EXPECT_EQ(entries[0].staticSharedBytes, 1024);
  EXPECT_EQ(entries[0].barriers, 1);
  EXPECT_EQ(entries[1].entry, "mugraph_k1_b");
  EXPECT_EQ(entries[1].registers, 40);
  EXPECT_EQ(entries[1].staticSharedBytes, 0);
}

// ptxas's advice that it serialized an entry's wgmma comes before the entry's own lines.
TEST(PtxasReport, ReadsWhichEntriesHadTheirWgmmaSerialized) {
  const std::string log =
      "ptxas info    : (C7519) warpgroup.arrive is injected in around line 465 by compiler to "
      "allow use of registers in GMMA in function 'mugraph_k1_b'\n"
      "ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are "
      "serialized due to non wgmma instructions defining accumulator registers of a wgmma "
      "between start and end of the pipeline stage in the function 'mugraph_k1_b'\n"
      "ptxas info    : Compiling entry function 'mugraph_k0_a' for 'sm_90a'\n"
      "ptxas info    : Used 168 registers, used 1 barriers\n"
      "ptxas info    : Compiling entry function 'mugraph_k1_b' for 'sm_90a'\n"
      "ptxas info    : Used 168 registers, used 16 barriers\n";
  const std::vector<KernelResources> entries = parsePtxasReport(log);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_FALSE(entries[0].wgmmaSerialized);
  EXPECT_TRUE(entries[1].wgmmaSerialized);
  EXPECT_EQ(entries[1].barriers, 16);
}

TEST(PtxasReport, NvrtcReportsTheResourcesOfARealCompile) {
  const NvrtcOutput out = compileWithNvrtc(
      "#include \"mugraph_device.cuh\"\n"
      "extern \"C\" __global__ void mugraph_k0_t(float* o) { o[threadIdx.x] = "
      "mg::to_f32(mg::from_f32<mg::bf16>(1.5f)); }\n",
      "tiny", 90, true);
  const std::vector<KernelResources> entries = parsePtxasReport(out.log);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].entry, "mugraph_k0_t");
  EXPECT_GT(entries[0].registers, 0);
  EXPECT_FALSE(out.cubin.empty());
}

// The cubin's own records give what the report gives (cubinResources): every shipped schedule
// (general, warpgroup GEMM and attention, split-KV, clusters, gathered operands), each entry's
// registers, barriers and stack frame, plus a kernel with a barrier and a local array.
TEST(PtxasReport, TheCubinRecordsWhatTheReportSays) {
  std::vector<std::pair<std::string, NvrtcOutput>> compiled;
  compiled.push_back(
      {"local", compileWithNvrtc("#include \"mugraph_device.cuh\"\n"
                                 "extern \"C\" __global__ void mugraph_k0_s(float* o, int i) {\n"
                                 "  __shared__ float s[300]; float l[64];\n"
                                 "  for (int j = 0; j < 64; ++j) l[j] = o[j * i];\n"
                                 "  s[threadIdx.x] = l[i & 63]; __syncthreads();\n"
                                 "  o[threadIdx.x] = s[299 - threadIdx.x]; }\n",
                                 "local", 90, true)});
  int kernels = 0;
  for (const auto& file :
       std::filesystem::directory_iterator(std::string(MUGRAPH_SOURCE_DIR) + "/schedules")) {
    if (file.path().extension() != ".json") continue;
    const graph::Schedule schedule = graph::loadSchedule(file.path().string());
    const EmittedSource emitted =
        emitSchedule(plan::planSchedule(schedule, plan::targetByName("sm_90")));
    compiled.push_back({schedule.name, compileWithNvrtc(emitted.source, schedule.name, 90, true,
                                                        emitted.archSpecific)});
  }
  for (const auto& [name, out] : compiled) {
    const std::vector<KernelResources> reported = parsePtxasReport(out.log);
    const std::vector<KernelResources> read = cubinResources(out.cubin);
    ASSERT_FALSE(reported.empty()) << name;
    ASSERT_EQ(read.size(), reported.size()) << name;
    for (const KernelResources& r : reported) {
      SCOPED_TRACE(name + ": " + r.entry);
      const auto found = std::find_if(read.begin(), read.end(),
                                      [&](const KernelResources& c) { return c.entry == r.entry; });
      ASSERT_NE(found, read.end());
      EXPECT_EQ(found->registers, r.registers);
      EXPECT_EQ(found->barriers, r.barriers);
      EXPECT_EQ(found->localBytes, r.localBytes);
      ++kernels;
    }
  }
  EXPECT_GT(kernels, 30);
  EXPECT_TRUE(cubinResources("not an ELF file").empty());
}

TEST(NvrtcCompiler, ErrorsCarryTheScheduleTheEntryAndTheLog) {
  const std::string source =
      "#include \"mugraph_device.cuh\"\n"
      "extern \"C\" __global__ void mugraph_k0_ok(float* o) { o[0] = 1.0f; }\n"
      "extern \"C\" __global__ void mugraph_k1_bad(float* o) {\n"
      "  o[0] = undefined_name;\n"
      "}\n";
  try {
    compileWithNvrtc(source, "broken", 80, false);
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_EQ(e.schedule(), "broken");
    EXPECT_EQ(e.entry(), "mugraph_k1_bad");
    EXPECT_NE(e.log().find("undefined_name"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("mugraph_k1_bad"), std::string::npos);
  }
}

TEST(NvrtcCompiler, VersionIsMajorDotMinor) {
  const std::string version = nvrtcVersionText();
  EXPECT_NE(version.find('.'), std::string::npos);
}

}  // namespace
}  // namespace mugraph::codegen
