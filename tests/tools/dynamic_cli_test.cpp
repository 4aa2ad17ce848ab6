// `mugraph check` and `replay` of dynamic schedules (issue 28): --dim checks one length, no
// --dim checks the range and names the lengths that fail.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "graph/files.h"
#include "tests/dynamic_schedules.h"
#include "tools/run_cli.h"

namespace mugraph::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class DynamicCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = std::filesystem::temp_directory_path() /
               ("mugraph_dynamic_cli_test_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(scratch_);
  }
  void TearDown() override { std::filesystem::remove_all(scratch_); }

  CliResult run(const std::string& args) { return runMugraph(args, scratch_.string()); }
  static std::string shipped(const std::string& name) {
    return std::string(MUGRAPH_SOURCE_DIR) + "/schedules/dynamic/" + name;
  }

  std::filesystem::path scratch_;
};

TEST_F(DynamicCliTest, GemmChecksAtEachLengthGiven) {
  for (const char* m : {"1", "100", "128", "4096"}) {
    const CliResult r = run("check " + shipped("gemm_dynamic_m.grid128.json") + " --dim m=" + m);
    EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr(std::string("at m=") + m + ": EQUIVALENT"));
  }
}

TEST_F(DynamicCliTest, AWrongScheduleRightAtOneLengthIsCaughtOverTheRange) {
  const std::string wrong = (scratch_ / "wrong.json").string();
  graph::saveSchedule(wrong, dynamicAttentionSchedule(/*missingRescale=*/true));
  const CliResult one = run("check " + wrong + " --dim s=64");
  EXPECT_EQ(one.exitCode, 0) << one.out << one.err;
  EXPECT_THAT(one.out, HasSubstr("at s=64: EQUIVALENT"));
  const CliResult range = run("check " + wrong);
  EXPECT_EQ(range.exitCode, 1) << range.out << range.err;
  EXPECT_THAT(range.out, HasSubstr("over its range: NOT EQUIVALENT over 8 lengths"));
  EXPECT_THAT(range.out, HasSubstr("s=65  NOT EQUIVALENT"));
  EXPECT_THAT(range.out, HasSubstr("s=64  EQUIVALENT"));
  const CliResult json = run("check " + wrong + " --json");
  const nlohmann::json parsed = nlohmann::json::parse(json.out);
  EXPECT_FALSE(parsed.at("equivalent").get<bool>());
  EXPECT_EQ(parsed.at("lengths").size(), 8u);
}

TEST_F(DynamicCliTest, TheShippedAttentionIsEquivalentOverItsRange) {
  const CliResult r = run("check " + shipped("attention_dynamic_kv.online64.json"));
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("EQUIVALENT over 8 lengths"));
  EXPECT_THAT(r.out, Not(HasSubstr("NOT")));
}

TEST_F(DynamicCliTest, BadDimsAreOneLineErrors) {
  const std::string gemm = shipped("gemm_dynamic_m.grid128.json");
  const CliResult outside = run("check " + gemm + " --dim m=5000");
  EXPECT_EQ(outside.exitCode, 2);
  EXPECT_THAT(outside.err, HasSubstr("m=5000 is outside the range [1, 4096]"));
  const CliResult unknown = run("check " + gemm + " --dim q=5");
  EXPECT_EQ(unknown.exitCode, 2);
  EXPECT_THAT(unknown.err, HasSubstr("has no dynamic dim 'q' (it has m)"));
  const CliResult malformed = run("check " + gemm + " --dim m");
  EXPECT_EQ(malformed.exitCode, 2);
  EXPECT_THAT(malformed.err, HasSubstr("--dim: expected NAME=LENGTH"));
  const CliResult replay = run("replay " + gemm + " --static --out " + (scratch_ / "out").string());
  EXPECT_EQ(replay.exitCode, 2);
  EXPECT_THAT(replay.err, HasSubstr("--static: needs --dim NAME=LENGTH"));
  const CliResult runWithout =
      run("replay " + gemm + " --run --out " + (scratch_ / "run").string());
  EXPECT_EQ(runWithout.exitCode, 2);
  EXPECT_THAT(runWithout.err,
              HasSubstr("pass --dim NAME=LENGTH for each, the length to launch at"));
  const CliResult outsideReplay =
      run("replay " + gemm + " --dim m=0 --out " + (scratch_ / "zero").string());
  EXPECT_EQ(outsideReplay.exitCode, 2);
  EXPECT_THAT(outsideReplay.err, HasSubstr("m=0 is outside the range [1, 4096]"));
}

// Without --dim (or with it, without --static) a dynamic schedule becomes kernels that take the
// lengths; --static generates static kernels for one length as before.
TEST_F(DynamicCliTest, ReplayWritesKernelsThatTakeTheLengthsOrStaticOnesWithStatic) {
  const std::string gemm = shipped("gemm_dynamic_m.grid128.json");
  const CliResult dynamic = run("replay " + gemm + " --json --out " + (scratch_ / "d").string());
  ASSERT_EQ(dynamic.exitCode, 0) << dynamic.err;
  const nlohmann::json summary = nlohmann::json::parse(dynamic.out);
  EXPECT_EQ(summary.at("lengths"), "kernel_parameters");
  EXPECT_EQ(summary.at("kernels").at(0).at("grid"),
            nlohmann::json::parse(R"([{"ceil_div": ["m", 128]}, 1, 1])"));
  const CliResult withDim =
      run("replay " + gemm + " --dim m=100 --out " + (scratch_ / "d100").string());
  ASSERT_EQ(withDim.exitCode, 0) << withDim.err;
  EXPECT_THAT(withDim.out, HasSubstr("kernels take the lengths as parameters: m in [1, 4096]"));
  // One PTX for the range: the same whatever length --dim names.
  std::ifstream a(scratch_ / "d" / "sm_90.ptx");
  std::ifstream b(scratch_ / "d100" / "sm_90.ptx");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}),
            std::string(std::istreambuf_iterator<char>(b), {}));
  const CliResult fixed =
      run("replay " + gemm + " --dim m=100 --static --json --out " + (scratch_ / "s").string());
  ASSERT_EQ(fixed.exitCode, 0) << fixed.err;
  const nlohmann::json staticSummary = nlohmann::json::parse(fixed.out);
  EXPECT_FALSE(staticSummary.contains("lengths"));
  EXPECT_EQ(staticSummary.at("kernels").at(0).at("grid"), nlohmann::json::parse("[1, 1, 1]"));
}

}  // namespace
}  // namespace mugraph::testing
