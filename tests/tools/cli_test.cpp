// The `mugraph` CLI end to end: the shipped schedules check out, output formats hold, and
// bad input or usage gives exit code 2 with one line naming where and why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tools/run_cli.h"

namespace mugraph::testing {
namespace {

using ::testing::HasSubstr;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = std::filesystem::temp_directory_path() /
               ("mugraph_cli_test_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(scratch_);
  }
  void TearDown() override { std::filesystem::remove_all(scratch_); }

  CliResult run(const std::string& args) { return runMugraph(args, scratch_.string()); }
  std::string shipped(const std::string& name) {
    return std::string(MUGRAPH_SOURCE_DIR) + "/schedules/" + name;
  }
  std::string writeScratch(const std::string& name, const std::string& contents) {
    const auto path = scratch_ / name;
    std::ofstream(path) << contents;
    return path.string();
  }

  std::filesystem::path scratch_;
};

TEST_F(CliTest, HelpListsEveryCommandAndExitsZero) {
  const CliResult r = run("--help");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_THAT(r.out, HasSubstr("show"));
  EXPECT_THAT(r.out, HasSubstr("check"));
  EXPECT_THAT(r.out, HasSubstr("Exit codes"));
}

TEST_F(CliTest, ShippedSchedulesCheckInDoubleWithinOneInABillion) {
  for (const char* name : {"gqa_mirage.split_kv.json", "gemm_1024.tiled.json"}) {
    SCOPED_TRACE(name);
    const CliResult r = run("check --json " + shipped(name));
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    const auto result = nlohmann::json::parse(r.out);
    EXPECT_TRUE(result.at("valid").get<bool>());
    EXPECT_LE(result.at("max_rel_error").get<double>(), 1e-9);
    EXPECT_EQ(result.at("level"), "finite-field");
    EXPECT_LE(result.at("false_accept_bound").get<double>(), 1e-12);
    EXPECT_GE(result.at("trials").get<int>(), 1);
    EXPECT_TRUE(result.contains("seed"));
  }
}

TEST_F(CliTest, ShowSummarizesKernelsGridsTilesAndSharedMemory) {
  const CliResult r = run("show " + shipped("gqa_mirage.split_kv.json"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("gqa_split_kv_partial"));
  EXPECT_THAT(r.out, HasSubstr("grid (2, 16, 4)"));
  EXPECT_THAT(r.out, HasSubstr("shared memory"));
  EXPECT_THAT(r.out, HasSubstr("[1, 64, 64]"));
  const CliResult program = run("show " + shipped("gqa_mirage.mg"));
  ASSERT_EQ(program.exitCode, 0) << program.err;
  EXPECT_THAT(program.out, HasSubstr("matmul(Q, K)"));
}

TEST_F(CliTest, DotOutputIsAGraphvizDigraph) {
  const CliResult r = run("show --dot " + shipped("gemm_1024.tiled.json"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("digraph schedule {"));
  EXPECT_THAT(r.out, HasSubstr("subgraph cluster_0"));
  EXPECT_EQ(r.out.back(), '\n');
}

TEST_F(CliTest, CheckOfAWrongScheduleExitsOne) {
  // The tiled GEMM with its output tiles placed transposed (block (x, y) writes tile (y, x))
  // still validates, since the shapes agree, but computes something else.
  std::ifstream in(shipped("gemm_1024.tiled.json"));
  nlohmann::json schedule = nlohmann::json::parse(in);
  schedule.erase("hash");
  auto& store = schedule["kernels"][0]["ops"][4];
  ASSERT_EQ(store["op"], "output");
  store["omap"] = {{"x", 1}, {"y", 0}, {"z", -1}};
  const std::string path = writeScratch("wrong.json", schedule.dump());
  const CliResult r = run("check --json " + path);
  EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
  const auto result = nlohmann::json::parse(r.out);
  EXPECT_FALSE(result.at("valid").get<bool>());
  EXPECT_GT(result.at("max_rel_error").get<double>(), 1e-3);
}

TEST_F(CliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(run("").exitCode, 2);
  EXPECT_EQ(run("frobnicate").exitCode, 2);
  EXPECT_EQ(run("check").exitCode, 2);
  EXPECT_EQ(run("check --trials 0 " + shipped("gemm_1024.tiled.json")).exitCode, 2);
  const CliResult missing = run("check /nonexistent/schedule.json");
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/schedule.json"));
}

TEST_F(CliTest, CheckOnAProgramExplainsThatAScheduleIsNeeded) {
  const CliResult r = run("check " + shipped("gqa_mirage.mg"));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_THAT(r.err, HasSubstr("gqa_mirage.mg"));
}

}  // namespace
}  // namespace mugraph::testing
