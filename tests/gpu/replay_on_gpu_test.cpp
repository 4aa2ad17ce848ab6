// GPU tests (ctest label `gpu`): every shipped and search-found schedule, replayed to PTX and
// run on the GPU through `mugraph replay --run`, matches the reference interpreter on fresh random
// inputs with every poisoned output element overwritten; every safe attention schedule does so at
// the logit spreads of real models. Skipped cleanly where there is no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "graph/files.h"
#include "graph/validate.h"
#include "runtime/cuda_driver.h"
#include "shipped_schedules.h"
#include "tools/run_cli.h"

namespace mugraph::testing {
namespace {

// A fresh folder of this process for the test named `name`.
std::filesystem::path scratchFolder(const std::string& name) {
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() /
      ("mugraph_gpu_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::create_directories(folder);
  return folder;
}

// The "gpu" object of `mugraph replay SCHEDULE --out OUT --run --json FLAGS` (printed under
// `label`), or nothing, with the command's output as a test failure, where it did not succeed.
std::optional<nlohmann::json> replayedOnGpu(const std::string& schedule,
                                            const std::filesystem::path& out,
                                            const std::string& label,
                                            const std::string& flags = "") {
  const CliResult r =
      runMugraph("replay " + schedule + " --out " + out.string() + " --run --json" + flags,
                 out.parent_path().string());
  if (r.exitCode != 0) {
    ADD_FAILURE() << label << ": exit " << r.exitCode << "\n" << r.out << r.err;
    return std::nullopt;
  }
  nlohmann::json gpu = nlohmann::json::parse(r.out).at("gpu");
  std::cout << "[gpu] " << label << ": " << gpu.dump() << "\n";
  return gpu;
}

class ReplayOnGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string whyNot;
    if (!runtime::CudaDriver::open(whyNot)) GTEST_SKIP() << whyNot;
    std::string name = GetParam();
    std::replace(name.begin(), name.end(), '/', '_');
    scratch_ = scratchFolder(name);
  }
  void TearDown() override {
    if (!scratch_.empty()) std::filesystem::remove_all(scratch_);
  }
  std::filesystem::path scratch_;
};

TEST_P(ReplayOnGpu, MatchesTheInterpreterAndOverwritesEveryOutput) {
  const std::optional<nlohmann::json> replayed =
      replayedOnGpu(sourceDir() + "/schedules/" + GetParam(), scratch_ / "replay", GetParam());
  ASSERT_TRUE(replayed);
  const nlohmann::json& gpu = *replayed;
  EXPECT_TRUE(gpu.at("matches").get<bool>());
  EXPECT_EQ(gpu.at("unwritten_elements").get<int64_t>(), 0);
  EXPECT_TRUE(gpu.at("written_past_end").empty()) << gpu.at("written_past_end").dump();
  EXPECT_LE(gpu.at("max_rel_error").get<double>(), gpu.at("tolerance").get<double>());
  EXPECT_GT(gpu.at("timing").at("median_us").get<double>(), 0.0);
}

// The sm_80 path (mma.sync, cp.async) of a GEMM that takes the warpgroup path on sm_90: its
// sm_80 PTX runs on any newer GPU too.
TEST(ReplayOnGpuSm80, TheSm80PathOfATiledGemmMatchesTheInterpreter) {
  std::string whyNot;
  if (!runtime::CudaDriver::open(whyNot)) GTEST_SKIP() << whyNot;
  const std::filesystem::path scratch = scratchFolder("sm80");
  const std::optional<nlohmann::json> gpu =
      replayedOnGpu(sourceDir() + "/schedules/gemm_1024.tiled.json", scratch / "replay80",
                    "gemm_1024.tiled sm_80", " --arch sm_80");
  if (gpu) {
    EXPECT_TRUE(gpu->at("matches").get<bool>());
    EXPECT_EQ(gpu->at("unwritten_elements").get<int64_t>(), 0);
  }
  std::filesystem::remove_all(scratch);
}

// Warpgroup GEMMs sized for two and three blocks per multiprocessor (graph::BlockGraph::occupancy),
// each persistent: 264 blocks walk 288 tiles of 64 x 128, 396 blocks walk 576 tiles of 64 x 64.
TEST(ReplayOnGpuOccupancy, TwoAndThreeBlocksPerMultiprocessorMatchTheInterpreter) {
  std::string whyNot;
  if (!runtime::CudaDriver::open(whyNot)) GTEST_SKIP() << whyNot;
  const std::filesystem::path scratch = scratchFolder("occupancy");
  for (const std::string name : {"gemm_768x3072x768_64x128_o2", "gemm_768x3072x768_64x64_o3"}) {
    const std::optional<nlohmann::json> gpu =
        replayedOnGpu(sourceDir() + "/tests/plan/" + name + ".json", scratch / name, name);
    if (!gpu) continue;
    EXPECT_TRUE(gpu->at("matches").get<bool>()) << name;
    EXPECT_EQ(gpu->at("unwritten_elements").get<int64_t>(), 0) << name;
    EXPECT_TRUE(gpu->at("written_past_end").empty()) << name;
  }
  std::filesystem::remove_all(scratch);
}

// Outputs stored heads_transposed ([h, s, d] written as [s, h, d], so that the next
// projection reads attention's result as it is): found schedules of warpgroup attention (head
// dim 96; causal GQA with its query heads folded into the rows) and of split-KV decode, each
// with every output of rank 3 or more stored so, match the interpreter read back in that order.
TEST(ReplayOnGpuLayouts, OutputsStoredHeadsTransposedMatchTheInterpreter) {
  std::string whyNot;
  if (!runtime::CudaDriver::open(whyNot)) GTEST_SKIP() << whyNot;
  const std::filesystem::path scratch = scratchFolder("heads_out");
  for (const std::string name :
       {"mha_prefill_16x1024_d96.v3b951690ab4491fa", "gqa_prefill_causal_512.va262bfc6cf2fbc13",
        "gqa_decode.v1f3853ab83190c9b"}) {
    graph::Schedule schedule =
        graph::loadSchedule(sourceDir() + "/schedules/found/" + name + ".json");
    int stored = 0;
    for (graph::KernelGraph* g : {&schedule.program, &schedule.graph}) {
      for (graph::TensorId t : g->outputs) {
        if (g->tensors[t].shape.size() < 3) continue;
        g->tensors[t].layout = graph::Layout::HeadsTransposed;
        ++stored;
      }
    }
    ASSERT_GT(stored, 0) << name;
    graph::validateSchedule(schedule);
    const std::string file = (scratch / (name + ".heads.json")).string();
    graph::saveSchedule(file, schedule);
    const std::optional<nlohmann::json> gpu =
        replayedOnGpu(file, scratch / name, name + " heads_transposed");
    if (!gpu) continue;
    EXPECT_TRUE(gpu->at("matches").get<bool>()) << name;
    EXPECT_EQ(gpu->at("unwritten_elements").get<int64_t>(), 0) << name;
    EXPECT_TRUE(gpu->at("written_past_end").empty()) << name;
  }
  std::filesystem::remove_all(scratch);
}

// Every schedule schedules/shipped.txt lists. Among them: partial tiles
// (graph/tile_splits.h: GEMMs of 1030³ on the general path, 1000³ on the warpgroup path with
// the copy engine zero-filling past the end, a [16, 4096]·[4096, 32001] vocabulary
// projection); GEMMs on the sm_90 warpgroup path with one warpgroup doing both (.tiled) or a
// copy warpgroup beside multiplying ones (.warpgroups; persistent at 4096 and 8192), each
// operand K-major or M/N-major (_bt, _at_bf16); split-KV decode from 1K to 64K context; flash
// and warpgroup prefill.
std::vector<std::string> shippedScheduleFiles() {
  std::vector<std::string> files;
  for (const ShippedSchedule& s : shippedSchedules()) files.push_back(s.file);
  return files;
}

INSTANTIATE_TEST_SUITE_P(ShippedSchedules, ReplayOnGpu, ::testing::ValuesIn(shippedScheduleFiles()),
                         [](const auto& info) {
                           std::string name = info.param.substr(0, info.param.rfind('.'));
                           for (char& c : name) c = c == '.' ? '_' : c;
                           return name;
                         });

// Every schedule the search found (schedules/found/): the paths and fusions no shipped
// schedule takes (a GEMM's epilogue in registers, causal prefill, ...), relative to schedules/.
std::vector<std::string> foundScheduleFiles() {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(sourceDir() + "/schedules/found")) {
    if (entry.path().extension() == ".json")
      found.push_back("found/" + entry.path().filename().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

INSTANTIATE_TEST_SUITE_P(FoundSchedules, ReplayOnGpu, ::testing::ValuesIn(foundScheduleFiles()),
                         [](const auto& info) {
                           std::string name = info.param.substr(0, info.param.rfind('.'));
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// Every shipped and search-found schedule of a safe attention program (one that subtracts
// the row max: its program has reduce_max), relative to schedules/.
std::vector<std::string> safeAttentionSchedules() {
  std::vector<std::string> found;
  for (const char* folder : {"", "found/"}) {
    for (const auto& entry :
         std::filesystem::directory_iterator(sourceDir() + "/schedules/" + folder)) {
      if (entry.path().extension() != ".json") continue;
      std::ifstream file(entry.path());
      const nlohmann::json schedule = nlohmann::json::parse(file);
      for (const auto& op : schedule.at("program").at("ops")) {
        if (op.at("op") == "reduce_max") {
          found.push_back(folder + entry.path().filename().string());
          break;
        }
      }
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

// Real models' logits: standard deviations 1 to 16. Normal inputs drawn so the logits have
// that spread; no output may be non-finite and the error stays within the f16 tolerance of
// the float64 interpreter.
class SafeAttentionOnGpu : public ReplayOnGpu {};

TEST_P(SafeAttentionOnGpu, IsFiniteAndAccurateAtEveryLogitSpread) {
  const std::string schedule = sourceDir() + "/schedules/" + GetParam();
  const std::string out = (scratch_ / "replay").string();
  for (const char* spread : {"1", "4", "8", "16"}) {
    SCOPED_TRACE(std::string("logit std ") + spread);
    const CliResult r = runMugraph("replay " + schedule + " --out " + out +
                                       " --run --json --repetitions 5 --logit-std " + spread,
                                   scratch_.string());
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    const auto gpu = nlohmann::json::parse(r.out).at("gpu");
    std::cout << "[gpu] " << GetParam() << " logit std " << spread << ": "
              << gpu.at("max_rel_error").dump() << " (" << gpu.at("inputs").get<std::string>()
              << ")\n";
    EXPECT_TRUE(gpu.at("matches").get<bool>());
    EXPECT_EQ(gpu.at("unwritten_elements").get<int64_t>(), 0);  // NaN counts as unwritten
    EXPECT_TRUE(gpu.at("written_past_end").empty()) << gpu.at("written_past_end").dump();
    EXPECT_FALSE(gpu.at("max_rel_error").is_null());  // an infinity is null
  }
}

INSTANTIATE_TEST_SUITE_P(ShippedAndFound, SafeAttentionOnGpu,
                         ::testing::ValuesIn(safeAttentionSchedules()), [](const auto& info) {
                           std::string name = info.param.substr(0, info.param.rfind('.'));
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace mugraph::testing
