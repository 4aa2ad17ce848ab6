// GPU tests (ctest label `gpu`) of external dataset members (dataset/external_member.h), on
// the committed Triton members of a small GEMM (tests/dataset/external_fixture): `dataset
// check --run --record` launches the correct one from its manifest, records gpu-random-test
// evidence (a trial per spread, the worst error, the tolerance) and its timing; the planted
// wrong one (its loop over K stops a tile short) fails the run, is recorded as failed with the
// reason and kept out of its class, after which the plain check passes. Skipped cleanly where
// there is no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/cuda_driver.h"
#include "tools/run_cli.h"

namespace mugraph::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

class ExternalMembersOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string whyNot;
    if (!runtime::CudaDriver::open(whyNot)) GTEST_SKIP() << whyNot;
    scratch_ = fs::temp_directory_path() / ("mugraph_gpu_external_" + std::to_string(::getpid()));
    fs::remove_all(scratch_);
    fs::create_directories(scratch_);
  }
  void TearDown() override {
    if (!scratch_.empty()) fs::remove_all(scratch_);
  }
  CliResult run(const std::string& args) { return runMugraph(args, scratch_.string()); }
  std::string fixture(const std::string& name) {
    return sourceDir() + "/tests/dataset/external_fixture/" + name;
  }
  json rowOf(const std::string& compilerPrefix, bool wrong) {
    std::ifstream in(scratch_ / "ds" / "manifest.jsonl");
    std::string line;
    while (std::getline(in, line)) {
      const json row = json::parse(line);
      const bool isWrong = row.at("source").at("command").get<std::string>().find(
                               "--plant-wrong") != std::string::npos;
      if (row.at("variant").get<std::string>().rfind(compilerPrefix, 0) == 0 && isWrong == wrong) {
        return row;
      }
    }
    return json();
  }
  fs::path scratch_;
};

TEST_F(ExternalMembersOnGpu, ACorrectMemberPassesAndAPlantedWrongOneIsKeptOut) {
  const std::string ds = (scratch_ / "ds").string();
  ASSERT_EQ(run("dataset add " + ds + " " + fixture("triton_member")).exitCode, 0);
  const CliResult passed = run("dataset check " + ds + " --run --record");
  ASSERT_EQ(passed.exitCode, 0) << passed.out << passed.err;
  const json good = rowOf("triton-", false);
  EXPECT_EQ(good.at("verification").at("status"), "passed");
  EXPECT_EQ(good.at("verification").at("trials").size(), 3u);
  EXPECT_LE(good.at("verification").at("worst_error").get<double>(),
            good.at("verification").at("tolerance").get<double>());
  EXPECT_GT(good.at("gpu").at("timing").at("median_us").get<double>(), 0.0);

  ASSERT_EQ(run("dataset add " + ds + " " + fixture("triton_wrong_member")).exitCode, 0);
  const CliResult failed = run("dataset check " + ds + " --run --record");
  EXPECT_EQ(failed.exitCode, 1) << failed.out << failed.err;
  EXPECT_THAT(failed.out, HasSubstr("does not match its program on the GPU"));
  const json wrong = rowOf("triton-", true);
  EXPECT_EQ(wrong.at("verification").at("status"), "failed");
  const json classes = json::parse(readWholeFile(ds + "/classes.json"));
  ASSERT_EQ(classes.at("classes")[0].at("excluded").size(), 1u);
  EXPECT_EQ(classes.at("classes")[0].at("excluded")[0].at("variant"), wrong.at("variant"));

  const CliResult after = run("dataset check " + ds + " --run");
  EXPECT_EQ(after.exitCode, 0) << after.out;
  EXPECT_THAT(after.out, HasSubstr("1 kept out"));
}

}  // namespace
}  // namespace mugraph::testing
