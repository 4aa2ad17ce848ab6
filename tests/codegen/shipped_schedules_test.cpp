// Every shipped schedule (schedules/shipped.txt) emits CUDA C++ that NVRTC compiles to PTX for
// compute_80 and compute_90 and assembles to an sm_90 cubin without spills or local memory;
// the emitted source is deterministic and the written files are complete.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "codegen/emit/kernel.h"
#include "codegen_test_support.h"
#include "graph/error.h"

namespace mugraph::codegen::testing {
namespace {

TEST(ShippedSchedules, ThereAreSome) {
  EXPECT_GE(shippedSchedulePaths().size(), 2u);
}

// schedules/shipped.txt, the one list the tests and benchmarks read, names exactly the
// schedule files of schedules/.
TEST(ShippedSchedules, TheListNamesEveryScheduleOfTheFolder) {
  std::vector<std::string> inFolder;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(MUGRAPH_SOURCE_DIR) + "/schedules")) {
    if (entry.path().extension() == ".json") inFolder.push_back(entry.path().string());
  }
  std::sort(inFolder.begin(), inFolder.end());
  std::vector<std::string> listed = shippedSchedulePaths();
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, inFolder);
}

// Schedules tuned for the sm_90 warpgroup path (large tiles, a copy warpgroup): on targets
// without it the mma.sync path holds their tiles only by spilling a little, or their plan
// needs more shared memory than such a target's block has (a clear error, checked below).
bool tunedForWarpgroups(const std::string& path) {
  for (const mugraph::testing::ShippedSchedule& s : mugraph::testing::shippedSchedules()) {
    if (path == mugraph::testing::shippedSchedulesFolder() + "/" + s.file) return s.sm90Tuned;
  }
  return false;
}

// Why the schedule at `path` cannot launch on `target`, or "".
std::string launchProblemOn(const std::string& path, const plan::Target& target) {
  try {
    plan::planSchedule(graph::loadSchedule(path), target);  // checks every kernel's launch
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(ShippedSchedules, CompileToPtxForEveryTargetAndAssembleWithoutSpills) {
  for (const std::string& path : shippedSchedulePaths()) {
    for (const plan::Target& target : plan::allTargets()) {
      SCOPED_TRACE(path + " for " + target.name);
      const bool mayspill = tunedForWarpgroups(path) && !target.warpgroupMma;
      const std::string problem = launchProblemOn(path, target);
      if (!problem.empty()) {
        // Only a schedule tuned for the warpgroup path may not fit an older target (its shared
        // memory, or clusters it lacks), and then generating code for it is a user error that
        // says so.
        EXPECT_TRUE(mayspill) << problem;
        EXPECT_TRUE(problem.find("shared memory") != std::string::npos ||
                    problem.find("clusters of") != std::string::npos)
            << problem;
        EXPECT_THROW(compiledShipped(path, target.computeCapability), UserError);
        continue;
      }
      const GeneratedCode& code = compiledShipped(path, target.computeCapability);
      ASSERT_EQ(code.ptx.size(), 1u);
      EXPECT_NE(code.ptx.at(target.name).find(".target " + target.name), std::string::npos);
      EXPECT_FALSE(code.cubin.empty());
      ASSERT_EQ(code.resources.size(), code.emitted.kernels.size());
      for (size_t k = 0; k < code.resources.size(); ++k) {
        const KernelResources& r = code.resources[k];
        SCOPED_TRACE(r.entry);
        EXPECT_EQ(r.entry, code.emitted.kernels[k].entry);
        EXPECT_NE(code.ptx.at(target.name).find(".entry " + r.entry), std::string::npos);
        EXPECT_GT(r.registers, 0);
        EXPECT_LE(r.registers, 255);
        if (!mayspill) {
          EXPECT_EQ(r.spillStoreBytes, 0);
          EXPECT_EQ(r.spillLoadBytes, 0);
          EXPECT_EQ(r.localBytes, 0);
        }
        EXPECT_FALSE(r.wgmmaSerialized);
        EXPECT_EQ(r.staticSharedBytes, 0);  // all shared memory is dynamic
        EXPECT_LE(code.emitted.kernels[k].dynamicSharedBytes, target.sharedBytesPerBlock);
      }
    }
  }
}

TEST(ShippedSchedules, EmittedSourceIsByteIdenticalAcrossRunsAndReloads) {
  for (const std::string& path : shippedSchedulePaths()) {
    SCOPED_TRACE(path);
    const graph::Schedule schedule = graph::loadSchedule(path);
    const std::string first = emitSchedule(schedule).source;
    EXPECT_EQ(first, emitSchedule(schedule).source);
    EXPECT_EQ(first, compiledShipped(path).emitted.source);
    const auto scratch = scratchFolder("reload");
    graph::saveSchedule((scratch / "s.json").string(), schedule);
    EXPECT_EQ(first, emitSchedule(graph::loadSchedule((scratch / "s.json").string())).source);
    std::filesystem::remove_all(scratch);
  }
}

TEST(ShippedSchedules, EntryNamesFollowKernelIndexAndName) {
  const GeneratedCode& code =
      compiledShipped(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/gqa_mirage.split_kv.json");
  ASSERT_EQ(code.emitted.kernels.size(), 2u);
  EXPECT_EQ(code.emitted.kernels[0].entry, "mugraph_k0_gqa_split_kv_partial");
  EXPECT_EQ(code.emitted.kernels[1].entry, "mugraph_k1_gqa_split_kv_combine");
  EXPECT_NE(code.emitted.source.find("extern \"C\" __global__"), std::string::npos);
  EXPECT_NE(code.emitted.source.find("#include \"mugraph_device.cuh\""), std::string::npos);
}

// sm_80's 164 KiB per multiprocessor hold two blocks of this GEMM with two stages each.
TEST(ShippedSchedules, TiledGemmOnSm80RunsMmaSyncWithATwoStageCpAsyncPipeline) {
  const GeneratedCode& code =
      compiledShipped(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/gemm_1024.tiled.json", 80);
  const std::string& source = code.emitted.source;
  EXPECT_NE(source.find("mg::mma_warp_tile<mg::f16"), std::string::npos);
  EXPECT_NE(source.find("mg::cp_async<16>"), std::string::npos);
  EXPECT_NE(source.find("mg::cp_async_wait<1>"), std::string::npos);
  EXPECT_NE(source.find("(it & 1) * 16384"), std::string::npos);
  EXPECT_NE(code.ptx.at("sm_80").find("mma.sync.aligned.m16n8k16"), std::string::npos);
  EXPECT_NE(code.ptx.at("sm_80").find("ldmatrix.sync.aligned"), std::string::npos);
  EXPECT_NE(code.ptx.at("sm_80").find("cp.async.cg.shared.global"), std::string::npos);
  EXPECT_FALSE(code.emitted.archSpecific);
}

// On sm_90 the same GEMMs take the warpgroup path: wgmma from swizzled tiles that bulk tensor
// copies fill, completing on mbarriers; the PTX targets sm_90a and the kernel takes one
// tensor map per operand after its pointers.
TEST(ShippedSchedules, TiledGemmsOnSm90RunWgmmaFedByBulkTensorCopies) {
  for (const char* name :
       {"gemm_1024.tiled", "gemm_4096.tiled", "gemm_4096.warpgroups", "gemm_1024_bt.warpgroups",
        "gemm_1024_at_bf16.warpgroups", "gemm_1000.warpgroups"}) {
    SCOPED_TRACE(name);
    const std::string path =
        std::string(MUGRAPH_SOURCE_DIR) + "/schedules/" + std::string(name) + ".json";
    const GeneratedCode& code = compiledShipped(path, 90);
    const std::string& ptx = code.ptx.at("sm_90");
    EXPECT_TRUE(code.emitted.archSpecific);
    EXPECT_NE(ptx.find(".target sm_90a"), std::string::npos);
    EXPECT_NE(ptx.find("wgmma.mma_async.sync.aligned.m64n"), std::string::npos);
    EXPECT_NE(ptx.find("cp.async.bulk.tensor.2d.shared::cluster.global"), std::string::npos);
    EXPECT_NE(ptx.find("mbarrier.try_wait.parity"), std::string::npos);
    EXPECT_EQ(ptx.find("mma.sync"), std::string::npos);
    ASSERT_EQ(code.emitted.kernels.size(), 1u);
    EXPECT_EQ(code.emitted.kernels[0].tensorMaps.size(), 2u);
    EXPECT_NE(code.emitted.source.find("const __grid_constant__ mg::TensorMap mg_map1"),
              std::string::npos);
  }
}

// Partial tiles on sm_90 (graph/tile_splits.h): where every stride suits the copy engine
// (1000 f16 elements: 2000 bytes) the warpgroup path takes them, the copy engine zero-filling
// past the tensor's end and the stores stopping there; rows of 1030 f16 elements (2060 bytes)
// are no copy-engine stride, so that GEMM stays on the general path with zero-filling
// cp.async copies.
TEST(ShippedSchedules, PartialTilesTakeTheWarpgroupPathWhereTheCopyEngineCanReadThem) {
  const GeneratedCode& gemm =
      compiledShipped(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/gemm_1000.warpgroups.json", 90);
  EXPECT_NE(gemm.emitted.source.find("realRows"), std::string::npos);
  EXPECT_NE(gemm.emitted.source.find("realCols"), std::string::npos);
  const GeneratedCode& attention = compiledShipped(
      std::string(MUGRAPH_SOURCE_DIR) + "/schedules/mha_prefill_1000.warpgroups.json", 90);
  EXPECT_NE(attention.emitted.source.find("mg::wgmma_m64n128k16_rs<1>"), std::string::npos);
  EXPECT_NE(attention.emitted.source.find("mg::negative_infinity()"), std::string::npos);
  EXPECT_NE(attention.emitted.source.find("mg::tile_extent(1000, 1000, 128, 0, it)"),
            std::string::npos);
  const GeneratedCode& odd =
      compiledShipped(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/gemm_1030.tiled.json", 90);
  EXPECT_FALSE(odd.emitted.archSpecific);
  EXPECT_NE(odd.ptx.at("sm_90").find("mma.sync"), std::string::npos);
  EXPECT_NE(odd.emitted.source.find("mg::cp_async_zfill<4>"), std::string::npos);
}

// Attention prefill on sm_90: S = Q·K by wgmma from shared tiles, the online softmax in the
// accumulator registers, P·V by wgmma with P from registers.
TEST(ShippedSchedules, PrefillAttentionOnSm90RunsBothMatmulsOnWgmma) {
  const GeneratedCode& code = compiledShipped(
      std::string(MUGRAPH_SOURCE_DIR) + "/schedules/mha_prefill_2048.warpgroups.json", 90);
  const std::string& source = code.emitted.source;
  EXPECT_TRUE(code.emitted.archSpecific);
  EXPECT_NE(source.find("mg::wgmma_m64n128k16<0, 0, 0>"), std::string::npos);  // S overwritten
  EXPECT_NE(source.find("mg::wgmma_m64n128k16<0, 0>"), std::string::npos);
  EXPECT_NE(source.find("mg::wgmma_m64n128k16_rs<1>"), std::string::npos);
  EXPECT_NE(source.find("__shfl_xor_sync"), std::string::npos);  // row max and sum
  EXPECT_EQ(code.emitted.kernels[0].tensorMaps.size(), 3u);
  EXPECT_NE(code.ptx.at("sm_90").find("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"),
            std::string::npos);
  EXPECT_EQ(code.ptx.at("sm_90").find("mma.sync"), std::string::npos);
  // Three stages: the overlapped loop. Each iteration issues its S = Q·K, then the previous
  // tile's P·V, and waits for the first alone (one group left in flight) before its softmax;
  // the last tile's P·V follows the loop; exp runs on the special-function unit.
  EXPECT_NE(source.find("mg::Ring<3>"), std::string::npos);
  const size_t wait = source.find("mg::wgmma_wait_group<1>();");
  ASSERT_NE(wait, std::string::npos);
  EXPECT_LT(source.find("mg::wgmma_descriptor_128b(vPrevious, "), wait);
  EXPECT_NE(source.find("// The last tile's P·V."), std::string::npos);
  EXPECT_NE(code.ptx.at("sm_90").find("ex2.approx.ftz.f32"), std::string::npos);
  // Row reductions as trees (the thread's 32 values of a row, then the quad), the division
  // by the row sum as one reciprocal a row, and each k step's descriptor one add past the
  // stage's: the loop's softmax took ~470 instructions a warp where it took ~550.
  EXPECT_NE(source.find("part[0] = mg::max_of(part[0], part[8]);"), std::string::npos);
  EXPECT_NE(source.find("part[0] = part[0] + part[1];"), std::string::npos);
  EXPECT_NE(source.find("_inverse[2] = {1.0f / "), std::string::npos);
  EXPECT_NE(source.find("mg::wgmma_descriptor_advance(mg::wgmma_descriptor_128b(kBase, "),
            std::string::npos);
  ASSERT_EQ(code.resources.size(), 1u);
  EXPECT_FALSE(code.resources[0].wgmmaSerialized);
  EXPECT_EQ(code.resources[0].spillStoreBytes, 0);
  EXPECT_EQ(code.resources[0].localBytes, 0);
}

// What the search found (schedules/found/) takes paths the shipped schedules may not: causal
// masks, loops that may not run at all. On sm_90 each assembles without spills and with its
// wgmma asynchronous (ptxas serializes them where it sees a path with one in flight at a
// register it guards).
TEST(FoundSchedules, AssembleForSm90WithoutSpillsOrSerializedWgmma) {
  int found = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(mugraph::testing::shippedSchedulesFolder() + "/found")) {
    if (entry.path().extension() != ".json") continue;
    ++found;
    SCOPED_TRACE(entry.path().filename().string());
    const GeneratedCode& code = compiledShipped(entry.path().string(), 90);
    ASSERT_EQ(code.resources.size(), code.emitted.kernels.size());
    for (const KernelResources& r : code.resources) {
      SCOPED_TRACE(r.entry);
      EXPECT_FALSE(r.wgmmaSerialized);
      EXPECT_EQ(r.spillStoreBytes, 0);
      EXPECT_EQ(r.localBytes, 0);
    }
  }
  EXPECT_GE(found, 2);
}

TEST(ShippedSchedules, WrittenFilesAreCompleteAndReload) {
  const std::string path = std::string(MUGRAPH_SOURCE_DIR) + "/schedules/gqa_mirage.split_kv.json";
  const GeneratedCode& code = compiledShipped(path);
  const auto scratch = scratchFolder("written");
  const std::vector<std::string> files = writeGeneratedCode(code, (scratch / "out").string());
  EXPECT_EQ(files, (std::vector<std::string>{"kernel.cu", "sm_90.ptx", "resources.json",
                                             "schedule.json", "manifest.json"}));
  for (const std::string& file : files) {
    EXPECT_TRUE(std::filesystem::exists(scratch / "out" / file)) << file;
  }
  EXPECT_EQ(graph::loadSchedule((scratch / "out" / "schedule.json").string()),
            graph::loadSchedule(path));
  EXPECT_EQ(graph::readFileText((scratch / "out" / "kernel.cu").string()), code.emitted.source);
  const auto resources =
      nlohmann::json::parse(graph::readFileText((scratch / "out" / "resources.json").string()));
  EXPECT_EQ(resources.at("arch"), "sm_90");
  EXPECT_EQ(resources.at("kernels").size(), 2u);
  std::filesystem::remove_all(scratch);
}

TEST(EmitSchedule, BlockGraphsNoGpuCouldLaunchAreRejectedWithTheReason) {
  graph::GraphBuilder program("too_big");
  const graph::TensorId x = program.input("X", graph::DType::F32, {256, 256});
  // X·X of 256 x 256 f32 in one block: both operands whole in shared memory (element-wise
  // ops alone would run row-owned, in registers).
  program.output(program.op(graph::OpKind::Matmul, {x, x}, {}, "Y"));
  graph::Schedule schedule;
  schedule.name = "too_big.one_block";
  schedule.program = program.finish();
  graph::BlockGraphBuilder block({1, 1, 1}, 128, 1, {schedule.program.tensors[0]});
  const graph::TensorId xt = block.input(0, {-1, -1, -1}, -1, "x");
  block.output(block.op(graph::OpKind::Matmul, {xt, xt}, {}, "y"), {-1, -1, -1});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  graph.output(graph.blockGraph("matmul", block.block(), {0}, {{"Y", graph::DType::F32}})[0]);
  schedule.graph = graph.finish();
  try {
    emitSchedule(schedule);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel matmul"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("shared memory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(testTarget().name), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mugraph::codegen::testing
