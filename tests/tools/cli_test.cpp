// The `mugraph` CLI end to end: the shipped schedules check out, output formats hold, and
// bad input or usage gives exit code 2 with one line naming where and why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "graph/malformed_cases.h"
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

TEST_F(CliTest, CheckSaysWhichScaledTwinDecidedItAndFullSizeChecksTheRealShapes) {
  // gemm_1024.tiled cuts rows and columns in parts of 128: both shrink (verify/README.md).
  const CliResult twin = run("check --json --trials 1 " + shipped("gemm_1024.tiled.json"));
  ASSERT_EQ(twin.exitCode, 0) << twin.out << twin.err;
  const auto result = nlohmann::json::parse(twin.out);
  ASSERT_TRUE(result.contains("scaled_twin")) << twin.out;
  const auto& dims = result.at("scaled_twin").at("dims");
  ASSERT_EQ(dims.size(), 2u);
  for (const auto& d : dims) {
    EXPECT_EQ(d.at("from"), 1024);
    EXPECT_EQ(d.at("period"), 128);
    EXPECT_EQ(d.at("to"), 256);
  }
  EXPECT_GT(result.at("scaled_twin").at("work_ratio").get<double>(), 10.0);
  const CliResult full =
      run("check --json --trials 1 --full-size " + shipped("gemm_1024.tiled.json"));
  ASSERT_EQ(full.exitCode, 0) << full.out << full.err;
  const auto real = nlohmann::json::parse(full.out);
  EXPECT_FALSE(real.contains("scaled_twin"));
  EXPECT_EQ(real.at("degree"), result.at("degree"));
  const CliResult text = run("check --trials 1 " + shipped("gemm_1024.tiled.json"));
  EXPECT_THAT(text.out, HasSubstr("scaled twin"));
}

TEST_F(CliTest, ShowSummarizesKernelsGridsTilesAndSharedMemory) {
  const CliResult r = run("show " + shipped("gqa_mirage.split_kv.json"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("gqa_split_kv_partial"));
  EXPECT_THAT(r.out, HasSubstr("grid (2, 16, 4)"));
  EXPECT_THAT(r.out, HasSubstr("shared memory"));
  EXPECT_THAT(r.out, HasSubstr("[1, 64, 64]"));
  // The cost model's view: the schedule's total and each kernel's terms.
  EXPECT_THAT(r.out, HasSubstr(" us on sm_90 (cost model)"));
  EXPECT_THAT(r.out, HasSubstr("us, bound by "));
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

// Every malformed program and schedule of the graph tests' table, through the CLI: `show`
// and `check` (and `verify`, whose either side may be bad) exit 2 with one line on stderr
// that names the file and the line or JSON path, and the reason; nothing on stdout.
TEST_F(CliTest, EveryMalformedInputExitsTwoWithOneLineNamingWhereAndWhy) {
  const std::vector<MalformedCase> cases = malformedCases();
  ASSERT_GE(cases.size(), 25u);
  for (const MalformedCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = writeScratch(c.fileName, c.contents);
    for (const std::string& command :
         {std::string("show "), std::string("check "), "verify " + shipped("gemm_1024.mg") + " "}) {
      const CliResult r = run(command + path);
      EXPECT_EQ(r.exitCode, 2) << command << r.err;
      EXPECT_TRUE(r.out.empty()) << command << r.out;
      ASSERT_FALSE(r.err.empty()) << command;
      EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
      EXPECT_THAT(r.err, HasSubstr(c.fileName));
      if (command == "show ") {
        EXPECT_THAT(r.err, HasSubstr(c.whereSubstring));
        EXPECT_THAT(r.err, HasSubstr(c.reasonSubstring));
      }
    }
  }
}

TEST_F(CliTest, VerifyComparesProgramsAndSchedulesAndReportsEveryField) {
  const CliResult same =
      run("verify --json " + shipped("gqa_mirage.mg") + " " + shipped("gqa_mirage.split_kv.json"));
  ASSERT_EQ(same.exitCode, 0) << same.err;
  const auto verdict = nlohmann::json::parse(same.out);
  for (const char* key :
       {"equivalent", "level", "trials", "seed", "false_accept_bound", "max_rel_error"}) {
    EXPECT_TRUE(verdict.contains(key)) << key;
  }
  EXPECT_TRUE(verdict.at("equivalent").get<bool>());
  EXPECT_EQ(verdict.at("level"), "finite-field");
  EXPECT_LE(verdict.at("false_accept_bound").get<double>(), 1e-12);

  // The same seed replays the same verdict.
  const std::string seed = std::to_string(verdict.at("seed").get<uint64_t>());
  const CliResult replay = run("verify --json --seed " + seed + " " + shipped("gqa_mirage.mg") +
                               " " + shipped("gqa_mirage.split_kv.json"));
  ASSERT_EQ(replay.exitCode, 0) << replay.err;
  EXPECT_EQ(nlohmann::json::parse(replay.out).at("seed"), verdict.at("seed"));

  // A different function over the same interface is not equivalent: exit 1.
  const std::string other = writeScratch("other.mg",
                                         "input A f16 [1024, 1024]\n"
                                         "input B f16 [1024, 1024]\n"
                                         "C = matmul(A, scale(B, c=2))\n"
                                         "output C\n");
  const CliResult differs =
      run("verify --json --trials 1 " + shipped("gemm_1024.mg") + " " + other);
  EXPECT_EQ(differs.exitCode, 1) << differs.err;
  EXPECT_FALSE(nlohmann::json::parse(differs.out).at("equivalent").get<bool>());

  // Different interfaces are bad input, not a verdict.
  const CliResult mismatch =
      run("verify " + shipped("gemm_1024.mg") + " " + shipped("gqa_mirage.mg"));
  EXPECT_EQ(mismatch.exitCode, 2);
}

}  // namespace
}  // namespace mugraph::testing
