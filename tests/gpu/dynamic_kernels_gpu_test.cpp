// GPU tests (ctest label `gpu`) of kernels that take the lengths of dynamic dims (issue 28):
// each dynamic schedule of schedules/dynamic/ is generated once per target (`mugraph replay`
// without --dim: one PTX for the range; sm_80 plans the general path, sm_90 the warpgroup GEMM
// path for the GEMM and the warpgroup attention path for the causal prefill, whose tensor maps
// the runtime encodes for each length), then that one PTX
// is launched by the runtime at lengths
// around each tile boundary, at 1 and at the range's max, on fresh normal random inputs, and
// compared with the interpreter of the program at that length; every output element must be
// written and nothing past a tensor's end. `replay --run --dim` does the same through the CLI.
// Skipped cleanly where there is no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "graph/files.h"
#include "runtime/cuda_driver.h"
#include "runtime/gpu_check.h"
#include "tools/run_cli.h"

namespace mugraph::testing {
namespace {

struct DynamicCase {
  std::string schedule;  // in schedules/dynamic/
  std::string dim;
  std::vector<int64_t> lengths;
  std::vector<std::string> archs = {"sm_80", "sm_90"};
};

std::vector<DynamicCase> dynamicCases() {
  return {{"gemm_dynamic_m.grid128.json", "m", {1, 63, 64, 65, 127, 128, 129, 1000, 4096}},
          {"attention_dynamic_kv.online64.json", "s", {1, 63, 64, 65, 1000, 2048}},
          // Split-KV over 4 fixed parts: two and three parts empty at 1-192, many trips at 2048.
          {"attention_dynamic_kv.split4x64.json", "s", {1, 63, 65, 192, 193, 256, 257, 1000, 2048}},
          // Causal prefill as the search found it: on sm_90 the warpgroup flash kernel, its
          // tensor maps' dims and strides encoded from s; a partial last query block and key
          // tile at most lengths, the diagonal tile masked with s.
          // A persistent warpgroup GEMM (as the search found it): one block per multiprocessor
          // walking ⌈m / 128⌉ x 32 tiles, from one tile to more than the blocks.
          {"gemm_dynamic_m_wide.persistent.json", "m", {1, 127, 128, 129, 500, 1000, 1024}},
          {"prefill_causal_dynamic.flash_q64_kv64.json", "s", {1, 2, 63, 64, 65, 129, 1000, 1024}},
          // (Its 128-row tiles take more shared memory than an sm_80 block has on the general
          // path.)
          {"prefill_causal_dynamic.flash_q128_kv128.json", "s",
           {1, 2, 127, 128, 129, 255, 257, 1000, 1024}, {"sm_90"}}};
}

class DynamicKernelsOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string whyNot;
    driver_ = runtime::CudaDriver::open(whyNot);
    if (!driver_) GTEST_SKIP() << whyNot;
    scratch_ = std::filesystem::temp_directory_path() /
               ("mugraph_gpu_dynamic_" + std::to_string(::getpid()));
    std::filesystem::create_directories(scratch_);
  }
  void TearDown() override {
    if (!scratch_.empty()) std::filesystem::remove_all(scratch_);
  }
  std::unique_ptr<runtime::CudaDriver> driver_;
  std::filesystem::path scratch_;
};

TEST_F(DynamicKernelsOnGpu, OnePtxMatchesTheInterpreterAtEveryLength) {
  for (const DynamicCase& c : dynamicCases()) {
    for (const std::string& arch : c.archs) {
      SCOPED_TRACE(c.schedule + " " + arch);
      const std::string path = sourceDir() + "/schedules/dynamic/" + c.schedule;
      const std::string out = (scratch_ / (c.dim + "_" + arch)).string();
      const CliResult r =
          runMugraph("replay " + path + " --arch " + arch + " --out " + out, scratch_.string());
      ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
      const graph::Schedule schedule = graph::loadSchedule(path);
      for (int64_t n : c.lengths) {
        const uint64_t seed = std::random_device{}();
        SCOPED_TRACE(c.dim + "=" + std::to_string(n) + ", seed " + std::to_string(seed));
        const runtime::GpuCheckReport report =
            runtime::checkOnGpu(*driver_, schedule, out, seed, /*repetitions=*/0,
                                runtime::GpuInputs{0.5, std::nullopt, 1.0}, {{c.dim, n}});
        std::cout << "[gpu] " << c.schedule << " " << arch << " " << c.dim << "=" << n << " ("
                  << report.ptxArch << "): max relative error " << report.maxRelError
                  << " (tolerance " << report.tolerance << ")\n";
        EXPECT_TRUE(report.matches);
        EXPECT_EQ(report.unwrittenElements, 0);
        EXPECT_TRUE(report.writtenPastEnd.empty());
        EXPECT_LE(report.maxRelError, report.tolerance);
      }
    }
  }
}

TEST_F(DynamicKernelsOnGpu, ReplayRunsTheKernelsThatTakeTheLengthAtTheGivenLength) {
  const std::string path = sourceDir() + "/schedules/dynamic/attention_dynamic_kv.online64.json";
  const CliResult r = runMugraph(
      "replay " + path + " --out " + (scratch_ / "cli").string() + " --dim s=1000 --run --json",
      scratch_.string());
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report.at("lengths"), "kernel_parameters");
  EXPECT_TRUE(report.at("gpu").at("matches").get<bool>()) << report.at("gpu").dump();
  EXPECT_EQ(report.at("gpu").at("unwritten_elements").get<int64_t>(), 0);
}

// `superoptimize --profile` of a dynamic projection: every variant's one PTX timed at every
// ranking length and checked against the interpreter where that is quick (m = 1 at least); the
// ranking and the dispatch over m follow the measured times.
TEST_F(DynamicKernelsOnGpu, ProfileTimesEveryVariantAtEveryRankingLengthAndDispatchesByIt) {
  std::ofstream(scratch_ / "proj.mg") << "program proj_dynamic\n"
                                         "dim m in [1, 2048]\n"
                                         "input A f16 [m, 512]\n"
                                         "input B f16 [512, 1024] layout=transposed\n"
                                         "C = matmul(A, B)\n"
                                         "output C\n";
  const std::string out = (scratch_ / "out").string();
  const CliResult r = runMugraph("superoptimize " + (scratch_ / "proj.mg").string() +
                                     " --profile --time-limit 30 --max-variants 4 --json --out " +
                                     out,
                                 scratch_.string());
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary.at("ranked_by"), "measured_gpu_time_over_range");
  const size_t lengths = summary.at("range").at("ranked_over").size();
  ASSERT_FALSE(summary.at("variants").empty());
  double previous = 0;
  for (const nlohmann::json& v : summary.at("variants")) {
    const nlohmann::json& measured = v.at("measured_over_range");
    ASSERT_EQ(measured.size(), lengths);
    for (const nlohmann::json& us : measured) EXPECT_GT(us.get<double>(), 0);
    EXPECT_EQ(v.at("gpu_checked_at").at(0).at("m"), 1);
    EXPECT_GE(v.at("range_score").get<double>(), previous);
    previous = v.at("range_score").get<double>();
  }
  const nlohmann::json& buckets = summary.at("range").at("dispatch").at("buckets");
  ASSERT_FALSE(buckets.empty());
  EXPECT_TRUE(buckets.at(0).contains("measured_at_max_us"));
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(out) / "dispatch.json"));
}

}  // namespace
}  // namespace mugraph::testing
