// `mugraph replay` end to end: files written, the JSON summary, --arch, --run without a
// runtime (exit 2 with a plain message) and bad input (exit 2).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "codegen_test_support.h"
#include "tools/run_cli.h"

namespace mugraph::codegen::testing {
namespace {

class ReplayCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = scratchFolder(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { std::filesystem::remove_all(scratch_); }
  mugraph::testing::CliResult run(const std::string& args) {
    return mugraph::testing::runMugraph(args, scratch_.string());
  }
  std::string shipped(const std::string& name) {
    return std::string(MUGRAPH_SOURCE_DIR) + "/schedules/" + name;
  }
  std::filesystem::path scratch_;
};

TEST_F(ReplayCliTest, WritesEveryFileAndSummarizesAsJson) {
  const std::string out = (scratch_ / "gqa").string();
  const auto r = run("replay " + shipped("gqa_mirage.split_kv.json") +
                     " --arch sm_80,sm_90 --out " + out + " --json");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary.at("schedule"), "gqa_mirage.split_kv");
  EXPECT_EQ(summary.at("kernels").size(), 2u);
  EXPECT_EQ(summary.at("kernels")[0].at("spill_store_bytes"), 0);
  EXPECT_GT(summary.at("kernels")[0].at("registers").get<int>(), 0);
  for (const char* file : {"kernel.cu", "sm_80.ptx", "sm_90.ptx", "resources.json", "schedule.json",
                           "manifest.json"}) {
    EXPECT_TRUE(std::filesystem::exists(scratch_ / "gqa" / file)) << file;
  }
}

TEST_F(ReplayCliTest, ASchedulePlannedDifferentlyPerTargetIsGeneratedOneTargetAtATime) {
  // The 4096 GEMM's pipeline is deeper on sm_90, whose multiprocessor holds two blocks of it.
  const std::string out = (scratch_ / "gemm4096").string();
  const auto r =
      run("replay " + shipped("gemm_4096.tiled.json") + " --arch sm_80,sm_90 --out " + out);
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("one architecture at a time"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sm_80"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(scratch_ / "gemm4096" / "kernel.cu"));
}

TEST_F(ReplayCliTest, ArchPicksThePtxTargetsAndProgramsUseDefaultSchedules) {
  const std::string out = (scratch_ / "gemm").string();
  const auto r = run("replay " + shipped("gemm_1024.mg") + " --arch sm_80 --out " + out);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(scratch_ / "gemm" / "sm_80.ptx"));
  EXPECT_FALSE(std::filesystem::exists(scratch_ / "gemm" / "sm_90.ptx"));
  EXPECT_TRUE(std::filesystem::exists(scratch_ / "gemm" / "resources.json"));
  // The summary names the architecture whose ptxas report it quotes.
  EXPECT_NE(r.out.find("B shared; sm_80: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("sm_90"), std::string::npos) << r.out;
}

TEST_F(ReplayCliTest, RunWithoutARuntimeExitsTwoWithAPlainMessage) {
  const auto r = run("replay " + shipped("gemm_1024.tiled.json") + " --run --out " +
                     (scratch_ / "run").string());
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("GPU"), std::string::npos) << r.err;
}

TEST_F(ReplayCliTest, BadInputExitsTwo) {
  EXPECT_EQ(run("replay " + shipped("gemm_1024.tiled.json") + " --arch sm_70 --out " +
                (scratch_ / "x").string())
                .exitCode,
            2);
  EXPECT_EQ(run("replay /nonexistent.json --out " + (scratch_ / "y").string()).exitCode, 2);
  EXPECT_EQ(run("replay " + shipped("gemm_1024.tiled.json")).exitCode, 2);  // no --out
}

}  // namespace
}  // namespace mugraph::codegen::testing
