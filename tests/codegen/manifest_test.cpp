// The standalone ABI as the manifest states it: tensor roles, 256-byte aligned workspace
// offsets, parameters per kernel (written tensors first, then read ones, in kernel order),
// launch order, grids, blocks and shared memory, resources and the NVRTC record.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "codegen/kernel_abi.h"
#include "codegen/manifest.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen_test_support.h"
#include "graph/error.h"
#include "plan/lower_predefined_ops.h"
#include "runtime/manifest_reader.h"

namespace mugraph::codegen::testing {
namespace {

using nlohmann::json;

// Generated for both targets: its tiles are small enough to plan alike on each.
const GeneratedCode& gqa() {
  const std::string path = std::string(MUGRAPH_SOURCE_DIR) + "/schedules/gqa_mirage.split_kv.json";
  return compiledOnce(path, [&] { return graph::loadSchedule(path); }, {90, 80});
}

std::vector<std::string> paramNames(const json& kernel) {
  std::vector<std::string> names;
  for (const json& p : kernel.at("params")) names.push_back(p.at("tensor"));
  return names;
}

TEST(Manifest, HeaderNamesTheScheduleItsHashesSourcesAndNvrtc) {
  const json m = manifestJson(gqa());
  EXPECT_EQ(m.at("format"), "mugraph.manifest");
  EXPECT_EQ(m.at("version"), 1);
  EXPECT_EQ(m.at("schedule"), "gqa_mirage.split_kv");
  EXPECT_EQ(m.at("schedule_hash"), "1c271ee37ff23208");
  EXPECT_EQ(m.at("program_hash"), "f829a5f4a315fc17");
  EXPECT_EQ(m.at("source"), "kernel.cu");
  EXPECT_EQ(m.at("ptx"), json({{"sm_80", "sm_80.ptx"}, {"sm_90", "sm_90.ptx"}}));
  EXPECT_EQ(m.at("nvrtc").at("version"), nvrtcVersionText());
  const json options = m.at("nvrtc").at("options");
  EXPECT_EQ(options.at("sm_80").back(), "--gpu-architecture=compute_80");
  EXPECT_NE(
      std::find(options.at("sm_90").begin(), options.at("sm_90").end(), "--gpu-architecture=sm_90"),
      options.at("sm_90").end());
}

TEST(Manifest, TensorsAreInputsOutputsThenWorkspaceAtAlignedOffsets) {
  const json m = manifestJson(gqa());
  const json& tensors = m.at("tensors");
  ASSERT_EQ(tensors.size(), 6u);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"Q", "input"},  {"K", "input"},         {"V", "input"},
      {"O", "output"}, {"Opart", "workspace"}, {"Spart", "workspace"}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(tensors[i].at("name"), expected[i].first);
    EXPECT_EQ(tensors[i].at("role"), expected[i].second);
  }
  EXPECT_EQ(tensors[0].at("dtype"), "f16");
  EXPECT_EQ(tensors[0].at("shape"), json({2, 256, 64}));
  EXPECT_EQ(tensors[0].at("layout"), "row_major");
  EXPECT_EQ(tensors[0].at("bytes"), 65536);
  EXPECT_FALSE(tensors[0].contains("offset"));
  EXPECT_EQ(tensors[4].at("offset"), 0);
  EXPECT_EQ(tensors[4].at("bytes"), 2 * 256 * 1024 * 4);
  EXPECT_EQ(tensors[5].at("offset"), 2 * 256 * 1024 * 4);
  EXPECT_EQ(m.at("workspace_bytes"), 2129920);
}

TEST(Manifest, KernelsListWrittenThenReadParamsInLaunchOrder) {
  const json m = manifestJson(gqa());
  const json& kernels = m.at("kernels");
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].at("entry"), "mugraph_k0_gqa_split_kv_partial");
  EXPECT_EQ(kernels[0].at("grid"), json({2, 16, 4}));
  EXPECT_EQ(kernels[0].at("block"), json({128, 1, 1}));
  EXPECT_EQ(paramNames(kernels[0]), (std::vector<std::string>{"Opart", "Spart", "Q", "K", "V"}));
  EXPECT_EQ(paramNames(kernels[1]), (std::vector<std::string>{"O", "Opart", "Spart"}));
  const json& opart = kernels[0].at("params")[0];
  EXPECT_EQ(opart.at("role"), "workspace");
  EXPECT_EQ(opart.at("access"), "write");
  EXPECT_EQ(opart.at("offset"), 0);
  EXPECT_EQ(opart.at("dtype"), "f32");
  EXPECT_EQ(kernels[0].at("params")[2].at("access"), "read");
  EXPECT_EQ(kernels[1].at("params")[0].at("role"), "output");
  EXPECT_GT(kernels[0].at("dynamic_shared_bytes").get<int64_t>(), 0);
  // The combine is element-wise over the partials: thread-owned, without shared memory.
  EXPECT_EQ(kernels[1].at("dynamic_shared_bytes").get<int64_t>(), 0);
  const json& resources = m.at("resources").at("sm_90");
  ASSERT_EQ(resources.size(), 2u);
  EXPECT_EQ(resources[0].at("entry"), "mugraph_k0_gqa_split_kv_partial");
  EXPECT_EQ(resources[0].at("spill_store_bytes"), 0);
  EXPECT_GT(resources[0].at("registers").get<int>(), 0);
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Manifest, EveryKernelWaitsForThePriorGridsBeforeItTouchesMemory) {
  const GeneratedCode& code = gqa();
  EXPECT_EQ(manifestJson(code).at("waits_for_prior_grids"), true);
  // Each entry's body opens with the two calls, before any load, store or early return.
  const std::string& source = code.emitted.source;
  size_t entries = 0;
  for (size_t at = source.find("__global__"); at != std::string::npos;
       at = source.find("__global__", at + 1)) {
    ++entries;
    const size_t body = source.find(") {\n", at);
    ASSERT_NE(body, std::string::npos);
    const size_t first = source.find_first_not_of(" \n", body + 3);
    const std::string launch = "mg::launch_dependents();\n";
    const std::string wait = "mg::wait_prior_grids();\n";
    EXPECT_EQ(source.compare(first, launch.size(), launch), 0) << source.substr(first, 80);
    const size_t second = source.find_first_not_of(" \n", source.find('\n', first));
    EXPECT_EQ(source.compare(second, wait.size(), wait), 0) << source.substr(second, 80);
  }
  EXPECT_EQ(entries, 2u);
  // sm_90 PTX has the instructions once per kernel; sm_80, which has no such thing, none.
  EXPECT_EQ(occurrences(code.ptx.at("sm_90"), "griddepcontrol.wait"), 2u);
  EXPECT_EQ(occurrences(code.ptx.at("sm_90"), "griddepcontrol.launch_dependents"), 2u);
  EXPECT_EQ(occurrences(code.ptx.at("sm_80"), "griddepcontrol"), 0u);
}

// The runtime reads the promise: launches overlap only where the manifest makes it, and an
// older manifest without the key is launched plainly.
TEST(Manifest, TheRuntimeReadsWhetherTheKernelsWaitForThePriorGrids) {
  const auto folder = scratchFolder("manifest_waits");
  writeGeneratedCode(gqa(), folder.string());
  const std::string path = (folder / "manifest.json").string();
  EXPECT_TRUE(runtime::readManifest(path).waitsForPriorGrids);
  json m = json::parse(graph::readFileText(path));
  m.erase("waits_for_prior_grids");
  graph::writeFileAtomic(path, m.dump());
  EXPECT_FALSE(runtime::readManifest(path).waitsForPriorGrids);
  m["waits_for_prior_grids"] = "yes";
  graph::writeFileAtomic(path, m.dump());
  try {
    runtime::readManifest(path);
    ADD_FAILURE() << "read a manifest whose waits_for_prior_grids is a string";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("$.waits_for_prior_grids: expected true or false"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(folder);
}

TEST(Manifest, IntermediatesOfALoweredProgramGetTheirOwnAlignedWorkspaceSlots) {
  const graph::Schedule lowered = lowerProgram(
      graph::loadProgram(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/gqa_mirage.mg"));
  const ScheduleAbi abi = planAbi(lowered.graph);
  int64_t expectedOffset = 0;
  int workspaceTensors = 0;
  for (const TensorBinding& binding : abi.tensors) {
    if (binding.role != TensorRole::Workspace) continue;
    ++workspaceTensors;
    EXPECT_EQ(binding.offset, expectedOffset);
    EXPECT_EQ(binding.offset % kWorkspaceAlignment, 0);
    expectedOffset += (binding.bytes + 255) / 256 * 256;
  }
  EXPECT_EQ(workspaceTensors, 4);  // A, E, S and div(E, S)
  EXPECT_EQ(abi.workspaceBytes, expectedOffset);
  ASSERT_EQ(abi.kernels.size(), lowered.graph.ops.size());
  for (const KernelAbi& kernel : abi.kernels) {
    const graph::KernelOp& op = lowered.graph.ops[kernel.kernelIndex];
    ASSERT_EQ(kernel.params.size(), op.outputs.size() + op.inputs.size());
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      EXPECT_EQ(kernel.params[i].tensor, op.outputs[i]);
      EXPECT_TRUE(kernel.params[i].written);
    }
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      EXPECT_EQ(kernel.params[op.outputs.size() + i].tensor, op.inputs[i]);
      EXPECT_FALSE(kernel.params[op.outputs.size() + i].written);
    }
  }
}

TEST(Manifest, TransposedInputsAreDescribedByTheirLayout) {
  const GeneratedCode& code =
      compiledShipped(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/gqa_decode_4k.split_kv.json");
  const json m = manifestJson(code);
  EXPECT_EQ(m.at("tensors")[1].at("name"), "K");
  EXPECT_EQ(m.at("tensors")[1].at("layout"), "transposed");
  EXPECT_EQ(m.at("tensors")[1].at("shape"), json({8, 128, 4096}));
}

TEST(Manifest, PredefinedOpsAreRejectedBeforeLowering) {
  const graph::Program program =
      graph::loadProgram(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/gemm_1024.mg");
  EXPECT_THROW(planAbi(program), mugraph::UserError);
}

TEST(Manifest, IdentifiersAreSanitized) {
  EXPECT_EQ(sanitizeIdentifier("gqa.split-kv 2"), "gqa_split_kv_2");
  EXPECT_EQ(sanitizeIdentifier(""), "op");
}

}  // namespace
}  // namespace mugraph::codegen::testing
