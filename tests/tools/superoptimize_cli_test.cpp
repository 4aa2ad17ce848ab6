// `mugraph superoptimize` end to end on a small GEMM: the JSON summary has every field the
// issue names, each variant folder holds the schedule and its code and is named by the hash
// of that schedule.json, every written schedule passes `mugraph check`, and the same search
// with one or two threads gives the same set.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "graph/files.h"
#include "graph/hash.h"
#include "tools/run_cli.h"

namespace mugraph::testing {
namespace {

namespace fs = std::filesystem;

class SuperoptimizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = fs::temp_directory_path() / ("mugraph_so_test_" + std::to_string(::getpid()));
    fs::create_directories(scratch_);
    std::ofstream(scratch_ / "small.mg") << "program small_gemm\n"
                                            "input A f16 [64, 128]\n"
                                            "input B f16 [128, 64]\n"
                                            "C = matmul(A, B)\n"
                                            "output C\n";
  }
  void TearDown() override { fs::remove_all(scratch_); }
  CliResult run(const std::string& args) { return runMugraph(args, scratch_.string()); }
  fs::path scratch_;
};

TEST_F(SuperoptimizeCli, WritesVerifiedVariantsWithCodeAndASummary) {
  const std::string program = (scratch_ / "small.mg").string();
  const CliResult r =
      run("superoptimize " + program + " --threads 2 --max-variants 3 --json --out " +
          (scratch_ / "out").string());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto summary = nlohmann::json::parse(r.out);
  for (const char* key : {"states", "pruned", "candidates", "verified", "seconds", "variants"}) {
    EXPECT_TRUE(summary.contains(key)) << key;
  }
  ASSERT_GE(summary.at("variants").size(), 1u);
  for (const auto& v : summary.at("variants")) {
    for (const char* key : {"name", "hash", "cost", "level"}) EXPECT_TRUE(v.contains(key)) << key;
    EXPECT_EQ(v.at("level"), "finite-field");
    const fs::path dir = scratch_ / "out" / v.at("name").get<std::string>();
    for (const char* file : {"schedule.json", "kernel.cu", "sm_90.ptx", "manifest.json"}) {
      EXPECT_TRUE(fs::is_regular_file(dir / file)) << dir / file;
    }
    EXPECT_EQ(graph::variantName(graph::loadSchedule((dir / "schedule.json").string())),
              v.at("name").get<std::string>());
    EXPECT_EQ(run("check --trials 1 " + (dir / "schedule.json").string()).exitCode, 0);
  }
  const CliResult one = run("superoptimize " + program + " --threads 1 --max-variants 3 --json");
  ASSERT_EQ(one.exitCode, 0) << one.err;
  auto names = [](const nlohmann::json& s) {
    std::vector<std::string> out;
    for (const auto& v : s.at("variants")) out.push_back(v.at("name"));
    return out;
  };
  EXPECT_EQ(names(nlohmann::json::parse(one.out)), names(summary));
}

// Two ops: beyond the limits of one candidate of one kernel of one op.
constexpr const char* kTwoOps =
    "program two_ops\n"
    "input A f16 [64, 128]\n"
    "input B f16 [128, 64]\n"
    "C = matmul(A, B)\n"
    "D = exp(C)\n"
    "output D\n";

// A program the search's limits leave without a candidate (two ops, one kernel of one op)
// does not end with exit 0: exit 1, and the summary and stderr say why.
TEST_F(SuperoptimizeCli, NoVerifiedVariantExitsOneAndSaysWhy) {
  std::ofstream(scratch_ / "two.mg") << kTwoOps;
  const std::string out = (scratch_ / "none").string();
  const CliResult r =
      run("superoptimize " + (scratch_ / "two.mg").string() +
          " --threads 1 --max-kernels 1 --max-block-ops 1 --no-split --json --out " + out);
  EXPECT_EQ(r.exitCode, 1) << r.err;
  const auto summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary.at("verified"), 0);
  EXPECT_THAT(summary.at("no_variants").get<std::string>(),
              ::testing::HasSubstr("no candidate within its limits"));
  EXPECT_THAT(summary.at("no_variants").get<std::string>(), ::testing::HasSubstr("kernel_limit"));
  EXPECT_THAT(r.err, ::testing::HasSubstr("no verified variant"));
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(out + "/summary.json")), summary);
}

// The same program beyond one candidate's limits is searched in pieces, one op each, and the
// pieces' best variants joined into one verified variant of the whole program.
TEST_F(SuperoptimizeCli, AProgramBeyondTheLimitsIsJoinedFromPieces) {
  std::ofstream(scratch_ / "two.mg") << kTwoOps;
  const CliResult r = run("superoptimize " + (scratch_ / "two.mg").string() +
                          " --threads 1 --max-kernels 1 --max-block-ops 1 --json --out " +
                          (scratch_ / "joined").string());
  EXPECT_EQ(r.exitCode, 0) << r.err;
  const auto summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary.at("pieces"), 2);
  // The join of the pieces' bests first, then joins that swap one piece's best for an
  // alternative, verified by composition (superoptimize_pieces.h).
  const nlohmann::json& variants = summary.at("variants");
  ASSERT_GE(variants.size(), 1u);
  EXPECT_EQ(summary.at("verified"), variants.size());
  for (size_t i = 0; i < variants.size(); ++i) {
    const nlohmann::json& variant = variants.at(i);
    EXPECT_EQ(variant.at("joined_from_pieces"), 2);
    EXPECT_EQ(variant.at("level"), "finite-field");
    EXPECT_EQ(variant.at("kernels"), 2);
    EXPECT_EQ(variant.value("verification_detail", "").rfind("by composition", 0) == 0, i > 0)
        << variant.dump();
  }
}

// A checkpoint covers whole-program searches only: a split run says its pieces are not in it.
TEST_F(SuperoptimizeCli, ASplitRunSaysItsPiecesAreNotCheckpointed) {
  std::ofstream(scratch_ / "two.mg") << kTwoOps;
  const CliResult r =
      run("superoptimize " + (scratch_ / "two.mg").string() +
          " --threads 1 --max-kernels 1 --max-block-ops 1 --checkpoint " +
          (scratch_ / "ckpt.json").string() + " --out " + (scratch_ / "joined").string());
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.err, ::testing::HasSubstr("2 pieces, which are not checkpointed"));
}

TEST_F(SuperoptimizeCli, UnknownProgramIsBadInput) {
  const CliResult r = run("superoptimize no_such_program");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_THAT(r.err, ::testing::HasSubstr("no_such_program"));
}

}  // namespace
}  // namespace mugraph::testing
