// `mugraph superoptimize` of a dynamic program (issue 28): the variants' schedules carry the
// program's dims, pass `mugraph check` over the range, each variant's folder holds kernels that
// take the lengths (kernel.cu, PTX and a manifest with the dims), `replay --dim --static`
// generates static code at a length, and the summary says the ranking is over the range and at
// which lengths. A
// dynamic program the search cannot cover length-independently is a one-line error (exit 2).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dynamic_schedules.h"
#include "graph/files.h"
#include "tools/run_cli.h"

namespace mugraph::testing {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class DynamicSuperoptimizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = fs::temp_directory_path() /
               ("mugraph_dynamic_so_test_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(scratch_);
  }
  void TearDown() override { fs::remove_all(scratch_); }
  CliResult run(const std::string& args) { return runMugraph(args, scratch_.string()); }
  static std::string shipped(const std::string& name) {
    return std::string(MUGRAPH_SOURCE_DIR) + "/schedules/dynamic/" + name;
  }

  // Superoptimizes `program`, then checks what every variant's folder and summary entry hold.
  nlohmann::json superoptimize(const std::string& program, const std::string& dim,
                               const std::string& replayDim) {
    const std::string out = (scratch_ / "out").string();
    const CliResult r = run("superoptimize " + program +
                            " --threads 1 --time-limit 20 --max-variants 2 --json --out " + out);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    const nlohmann::json summary = nlohmann::json::parse(r.out);
    EXPECT_EQ(summary.at("ranked_by"), "cost_model_over_range");
    const nlohmann::json& range = summary.at("range");
    EXPECT_EQ(range.at("dims").at(0).at("name"), dim);
    EXPECT_THAT(range.at("aggregate").get<std::string>(), HasSubstr("geometric mean"));
    EXPECT_GE(range.at("ranked_over").size(), 3u);
    EXPECT_GE(summary.at("variants").size(), 1u);
    double previous = 0;
    for (const nlohmann::json& v : summary.at("variants")) {
      const double score = v.at("range_score").get<double>();
      EXPECT_GE(score, previous);  // ranked by the range score
      previous = score;
      EXPECT_EQ(v.at("cost_over_range").size(), range.at("ranked_over").size());
      EXPECT_TRUE(v.at("range_check").at("equivalent").get<bool>());
      EXPECT_GE(v.at("range_check").at("lengths").size(), 3u);
      const fs::path folder = fs::path(out) / v.at("name").get<std::string>();
      const fs::path schedule = folder / "schedule.json";
      EXPECT_EQ(graph::loadSchedule(schedule.string()).program.dims.at(0).name, dim);
      EXPECT_TRUE(fs::is_regular_file(folder / "sm_90.ptx"));
      const nlohmann::json manifest =
          nlohmann::json::parse(std::ifstream(folder / "manifest.json"));
      EXPECT_EQ(manifest.at("dims").at(0).at("name"), dim);
      EXPECT_EQ(manifest.at("kernels").at(0).at("params").back().at("kind"), "dim");
      const CliResult check = run("check --trials 1 " + schedule.string());
      EXPECT_EQ(check.exitCode, 0) << check.out << check.err;
      EXPECT_THAT(check.out, HasSubstr("over its range: EQUIVALENT"));
      const fs::path code = scratch_ / ("code_" + v.at("name").get<std::string>());
      const CliResult replay = run("replay " + schedule.string() + " --dim " + replayDim +
                                   " --static --out " + code.string());
      EXPECT_EQ(replay.exitCode, 0) << replay.out << replay.err;
      EXPECT_TRUE(fs::is_regular_file(code / "kernel.cu"));
      EXPECT_TRUE(fs::is_regular_file(code / "sm_90.ptx"));
    }
    EXPECT_EQ(nlohmann::json::parse(std::ifstream(out + "/summary.json")), summary);
    return summary;
  }

  fs::path scratch_;
};

TEST_F(DynamicSuperoptimizeCli, GemmVariantsCarryTheDimAndHoldOverTheRange) {
  const nlohmann::json summary = superoptimize(shipped("gemm_dynamic_m.mg"), "m", "m=100");
  EXPECT_EQ(summary.at("range").at("searched_at").at("m"), 4096);
  EXPECT_EQ(summary.at("range").at("ranked_over").front().at("m"), 1);
}

TEST_F(DynamicSuperoptimizeCli, AttentionVariantsCarryTheDimAndHoldOverTheRange) {
  superoptimize(shipped("attention_dynamic_kv.mg"), "s", "s=100");
}

TEST_F(DynamicSuperoptimizeCli, TheTableSaysTheRankingIsOverTheRange) {
  const CliResult r = run("superoptimize " + shipped("gemm_dynamic_m.mg") +
                          " --threads 1 --time-limit 20 --max-variants 1");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ranked over the range by the cost model"));
  EXPECT_THAT(r.out, HasSubstr("m=1; m=2; m=3; m=4; m=6"));
}

// At its reference length this GEMM has more tiles than the target has multiprocessors, where
// a static one runs persistent. The sketch's warpgroup kernels (a copy warpgroup and
// multiplying ones) take the lengths: each either launches a block per tile (a grid that follows
// m) or runs persistent, one block per multiprocessor walking the tiles m gives (session 44 had
// them all fall off the warpgroup path, session 45 allowed the first form only). Their pool order
// and verification follow the range (at the reference length, on scaled twins).
TEST_F(DynamicSuperoptimizeCli, AGemmOfManyTilesGetsTheSketchsWarpgroupKernelsForEveryLength) {
  std::ofstream(scratch_ / "proj.mg") << "program proj_dynamic\n"
                                         "dim m in [1, 4096]\n"
                                         "input A f16 [m, 512]\n"
                                         "input B f16 [512, 1024] layout=transposed\n"
                                         "C = matmul(A, B)\n"
                                         "output C\n";
  const std::string out = (scratch_ / "out").string();
  const CliResult r = run("superoptimize " + (scratch_ / "proj.mg").string() +
                          " --threads 1 --time-limit 30 --max-variants 8 --json --out " + out);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  EXPECT_LT(summary.at("seconds").get<double>(), 30.0);
  int sketched = 0;
  for (const nlohmann::json& v : summary.at("variants")) {
    const fs::path folder = fs::path(out) / v.at("name").get<std::string>();
    const graph::Schedule schedule = graph::loadSchedule((folder / "schedule.json").string());
    const std::string& kernel = schedule.graph.ops.at(0).name;
    if (kernel.find("wgmma_gemm") == std::string::npos) continue;
    ++sketched;
    EXPECT_THAT(kernel, ::testing::Not(HasSubstr("_x2")));  // clusters need a fixed grid
    const nlohmann::json manifest = nlohmann::json::parse(std::ifstream(folder / "manifest.json"));
    const nlohmann::json& k = manifest.at("kernels").at(0);
    const bool perTile = k.at("grid").at(0).is_object() || k.at("grid").at(1).is_object();
    const std::string source = graph::readFileText((folder / "kernel.cu").string());
    const bool walks = source.find("const int mg_tiles = ") != std::string::npos;
    // A block per tile, as many as m needs; or one per multiprocessor walking them.
    EXPECT_TRUE(perTile != walks) << kernel << ": " << k.at("grid").dump();
    if (walks) {
      EXPECT_THAT(source, HasSubstr("(dim_m + "));
    }
    EXPECT_EQ(k.at("params").back().at("kind"), "dim");
  }
  EXPECT_GE(sketched, 1) << r.out;
  // The dispatch over m: buckets from 1 to 4096 without gap or overlap, each naming a written
  // variant, the first choice serving wherever no other is 3% cheaper; dispatch.json says the
  // same as the summary.
  const nlohmann::json& dispatch = summary.at("range").at("dispatch");
  EXPECT_EQ(dispatch.at("dim"), "m");
  const nlohmann::json file = nlohmann::json::parse(std::ifstream(fs::path(out) / "dispatch.json"));
  EXPECT_EQ(file.at("format"), "mugraph.dispatch");
  ASSERT_EQ(file.at("buckets").size(), dispatch.at("buckets").size());
  int64_t next = 1;
  for (size_t i = 0; i < file.at("buckets").size(); ++i) {
    const nlohmann::json& b = file.at("buckets")[i];
    EXPECT_EQ(b.at("min").get<int64_t>(), next);
    EXPECT_GE(b.at("max").get<int64_t>(), b.at("min").get<int64_t>());
    next = b.at("max").get<int64_t>() + 1;
    EXPECT_EQ(b.at("variant"), dispatch.at("buckets")[i].at("variant"));
    EXPECT_TRUE(fs::is_regular_file(fs::path(out) / b.at("variant").get<std::string>() /
                                    "manifest.json"));
  }
  EXPECT_EQ(next, 4097);
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("no dispatch.json")));
}

// A decode over a KV cache of any length: split-KV with fixed parts is a candidate (its trips
// follow the length), it is verified over the range, empty parts included, and the dispatch
// runs it at the long lengths, where one block per head leaves the SMs idle.
TEST_F(DynamicSuperoptimizeCli, ADecodeOverALongRangeDispatchesSplitKvAtTheLongLengths) {
  std::ofstream(scratch_ / "decode.mg") << kDynamicDecodeText;
  const std::string out = (scratch_ / "out").string();
  const CliResult r = run("superoptimize " + (scratch_ / "decode.mg").string() +
                          " --max-kernels 2 --time-limit 30 --max-variants 6 --json --out " + out);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  const nlohmann::json& buckets = summary.at("range").at("dispatch").at("buckets");
  ASSERT_FALSE(buckets.empty());
  const nlohmann::json& longest = buckets.back();
  EXPECT_EQ(longest.at("max"), 16384);
  const fs::path folder = fs::path(out) / longest.at("variant").get<std::string>();
  const graph::Schedule schedule = graph::loadSchedule((folder / "schedule.json").string());
  ASSERT_EQ(schedule.graph.ops.size(), 2u) << r.out;
  EXPECT_THAT(schedule.graph.ops.at(0).name, HasSubstr("split_kv")) << r.out;
  // Its parts are fixed; its trips follow s (the manifest's formula).
  const nlohmann::json manifest = nlohmann::json::parse(std::ifstream(folder / "manifest.json"));
  const nlohmann::json& grid = manifest.at("kernels").at(0).at("grid");
  for (const nlohmann::json& axis : grid) EXPECT_TRUE(axis.is_number_integer()) << grid.dump();
  for (const nlohmann::json& v : summary.at("variants")) {
    if (v.at("name") != longest.at("variant")) continue;
    // Checked at lengths with most parts empty (1) as well as at the range's end.
    const std::string lengths = v.dump();
    EXPECT_THAT(lengths, HasSubstr("\"dims\":{\"s\":1}")) << lengths;
    EXPECT_THAT(lengths, HasSubstr("\"dims\":{\"s\":16384}")) << lengths;
  }
}

// A causal prefill whose query and key lengths are both s: before, every kernel with a causal
// mask was refused for run-time lengths, and no variant came out. Now the search's warpgroup
// flash kernels take s (their tensor maps are encoded at launch from it) and rank first.
TEST_F(DynamicSuperoptimizeCli, ACausalPrefillGetsWarpgroupFlashKernelsThatTakeTheLength) {
  const nlohmann::json summary = superoptimize(shipped("prefill_causal_dynamic.mg"), "s", "s=300");
  const fs::path first = scratch_ / "out" / summary.at("variants").at(0).at("name").get<std::string>();
  const graph::Schedule schedule = graph::loadSchedule((first / "schedule.json").string());
  EXPECT_THAT(schedule.graph.ops.at(0).name, HasSubstr("flash_wgmma"));
  const nlohmann::json manifest = nlohmann::json::parse(std::ifstream(first / "manifest.json"));
  int maps = 0;
  for (const nlohmann::json& param : manifest.at("kernels").at(0).at("params")) {
    if (param.value("kind", "") == "tensor_map") ++maps;
  }
  EXPECT_EQ(maps, 3);
}

// rms_norm needs its row whole, so a dynamic row length can never be cut with a fixed tile.
TEST_F(DynamicSuperoptimizeCli, ADynamicDimNoScheduleCanTileIsABadInput) {
  std::ofstream(scratch_ / "norm.mg") << "program norm_dynamic\n"
                                         "dim h in [1, 1024]\n"
                                         "input X f16 [8, h]\n"
                                         "Y = rms_norm(X, dim=1)\n"
                                         "output Y\n";
  const CliResult r = run("superoptimize " + (scratch_ / "norm.mg").string() + " --threads 1");
  EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("no length-independent schedule"));
}

}  // namespace
}  // namespace mugraph::testing
