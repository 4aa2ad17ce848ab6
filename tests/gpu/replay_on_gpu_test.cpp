// GPU tests (ctest label `gpu`): every shipped schedule, replayed to PTX and run on the GPU
// through `mugraph replay --run`, matches the reference interpreter on fresh random inputs
// with every poisoned output element overwritten. Skipped cleanly where there is no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "codegen/runtime/cuda_driver.h"
#include "tools/run_cli.h"

namespace mugraph::testing {
namespace {

class ReplayOnGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string whyNot;
    if (!codegen::CudaDriver::open(whyNot)) GTEST_SKIP() << whyNot;
    scratch_ = std::filesystem::temp_directory_path() /
               ("mugraph_gpu_test_" + std::to_string(::getpid()) + "_" + GetParam());
    std::filesystem::create_directories(scratch_);
  }
  void TearDown() override {
    if (!scratch_.empty()) std::filesystem::remove_all(scratch_);
  }
  std::filesystem::path scratch_;
};

TEST_P(ReplayOnGpu, MatchesTheInterpreterAndOverwritesEveryOutput) {
  const std::string schedule = sourceDir() + "/schedules/" + GetParam();
  const std::string out = (scratch_ / "replay").string();
  const CliResult r =
      runMugraph("replay " + schedule + " --out " + out + " --run --json", scratch_.string());
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  const auto report = nlohmann::json::parse(r.out);
  const auto& gpu = report.at("gpu");
  std::cout << "[gpu] " << GetParam() << ": " << gpu.dump() << "\n";
  EXPECT_TRUE(gpu.at("matches").get<bool>());
  EXPECT_EQ(gpu.at("unwritten_elements").get<int64_t>(), 0);
  EXPECT_LE(gpu.at("max_rel_error").get<double>(), gpu.at("tolerance").get<double>());
  EXPECT_GT(gpu.at("timing").at("median_us").get<double>(), 0.0);
}

INSTANTIATE_TEST_SUITE_P(ShippedSchedules, ReplayOnGpu,
                         ::testing::Values("gqa_mirage.split_kv.json", "gemm_1024.tiled.json",
                                           "gqa_decode_4k.split_kv.json",
                                           "gqa_decode_32k.split_kv.json", "gemm_4096.tiled.json"),
                         [](const auto& info) {
                           std::string name = info.param.substr(0, info.param.find('.'));
                           return name;
                         });

}  // namespace
}  // namespace mugraph::testing
