// --profile's ranking without a GPU: the GPU's outcomes are data, so dropping a variant that
// does not match the interpreter, ranking the rest by measured time and keeping the ones that
// could not be profiled last is checked here on made-up outcomes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "driver/gpu_profile.h"
#include "driver/variant_files.h"

namespace mugraph::testing {
namespace {

namespace fs = std::filesystem;

search::SearchResult resultWith(const std::vector<std::string>& names) {
  search::SearchResult result;
  for (size_t i = 0; i < names.size(); ++i) {
    search::VerifiedVariant v;
    v.name = names[i];
    v.hash = 100 + i;
    result.variants.push_back(v);
  }
  result.summary.verified = names.size();
  result.summary.candidates = names.size();
  return result;
}

std::vector<std::string> namesOf(const search::SearchResult& result) {
  std::vector<std::string> names;
  for (const search::VerifiedVariant& v : result.variants) names.push_back(v.name);
  return names;
}

TEST(RankByMeasuredTime, DropsMismatchesAndRanksTheRestByTime) {
  search::SearchResult result = resultWith({"slow", "wrong", "fast", "unprofiled"});
  const std::vector<driver::GpuOutcome> outcomes = {
      {"slow", 5.0, false, 0, 0, ""},
      {"wrong", std::nullopt, true, INFINITY, 12, ""},
      {"fast", 2.0, false, 0, 0, ""},
      {"unprofiled", std::nullopt, false, 0, 0, "launch failed"}};
  const driver::ProfileRanking ranking = driver::rankByMeasuredTime(result, outcomes, "");
  EXPECT_EQ(namesOf(result), (std::vector<std::string>{"fast", "slow", "unprofiled"}));
  EXPECT_EQ(result.summary.verified, 3u);
  ASSERT_EQ(ranking.dropped.size(), 1u);
  EXPECT_EQ(ranking.dropped[0].name, "wrong");
  EXPECT_EQ(ranking.dropped[0].hash, 101u);
  EXPECT_EQ(ranking.measured.count("wrong"), 0u);
  EXPECT_TRUE(std::isinf(ranking.measured.at("unprofiled")));
  const nlohmann::json summary = driver::summaryJson(result, ranking);
  EXPECT_EQ(summary.at("ranked_by"), "measured_gpu_time");
  EXPECT_EQ(summary.at("dropped_on_gpu").at(0).at("name"), "wrong");
  EXPECT_FALSE(summary.contains("no_variants"));
}

TEST(RankByMeasuredTime, KeepsTheFolderOfADroppedVariantAsideWithItsSeed) {
  const fs::path out =
      fs::temp_directory_path() / ("mugraph_rank_test_" + std::to_string(getpid()));
  fs::create_directories(out / "wrong");
  std::ofstream(out / "wrong" / "schedule.json") << "{}";
  fs::create_directories(out / "right");
  search::SearchResult result = resultWith({"wrong", "right"});
  const driver::ProfileRanking ranking = driver::rankByMeasuredTime(
      result, {{"wrong", std::nullopt, true, 0.5, 0, "", 77}, {"right", 1.0, false, 0, 0, "", 78}},
      out.string());
  EXPECT_FALSE(fs::exists(out / "wrong"));  // no longer among the variants
  EXPECT_TRUE(fs::exists(out / "dropped_on_gpu" / "wrong" / "schedule.json"));
  EXPECT_TRUE(fs::exists(out / "right"));
  ASSERT_EQ(ranking.dropped.size(), 1u);
  EXPECT_EQ(ranking.dropped[0].seed, 77u);
  EXPECT_EQ(ranking.dropped[0].folder, (out / "dropped_on_gpu" / "wrong").string());
  const nlohmann::json summary = driver::summaryJson(result, ranking);
  EXPECT_EQ(summary.at("dropped_on_gpu").at(0).at("seed"), 77u);
  EXPECT_EQ(summary.at("dropped_on_gpu").at(0).at("folder"), ranking.dropped[0].folder);
  fs::remove_all(out);
}

TEST(RankByMeasuredTime, AllDroppedLeavesNoVariantsAndSaysWhy) {
  search::SearchResult result = resultWith({"a", "b"});
  const driver::ProfileRanking ranking = driver::rankByMeasuredTime(
      result, {{"a", std::nullopt, true, 2.0, 0, ""}, {"b", std::nullopt, true, 3.0, 0, ""}}, "");
  EXPECT_TRUE(result.variants.empty());
  EXPECT_EQ(result.summary.verified, 0u);
  const std::string why = driver::whyNoVariants(result, ranking);
  EXPECT_NE(why.find("does not match the interpreter"), std::string::npos) << why;
  const nlohmann::json summary = driver::summaryJson(result, ranking);
  EXPECT_EQ(summary.at("no_variants"), why);
  EXPECT_EQ(summary.at("ranked_by"), "measured_gpu_time");
}

TEST(WhyNoVariants, NamesTheSearchLimitsWhenThereIsNoCandidate) {
  search::SearchResult result;
  const std::string why = driver::whyNoVariants(result, {});
  EXPECT_NE(why.find("no candidate"), std::string::npos) << why;
  EXPECT_NE(why.find("--max-kernels"), std::string::npos) << why;
}

TEST(GpuOutcomes, TravelBetweenRanksAsText) {
  driver::GpuOutcome timed{"fast", 2.5, false, 0, 0, "", 41, 3, false};
  driver::GpuOutcome wrong{"wrong", std::nullopt, true, INFINITY, 12, "", 42, 1, true};
  driver::GpuOutcome failed{"failed", std::nullopt, false, 0, 0, "launch failed", 43, 2, false};
  for (const driver::GpuOutcome& o : {timed, wrong, failed}) {
    const driver::GpuOutcome back = driver::decodeGpuOutcome(driver::encodeGpuOutcome(o));
    EXPECT_EQ(back.variant, o.variant);
    EXPECT_EQ(back.microseconds, o.microseconds);
    EXPECT_EQ(back.mismatch, o.mismatch);
    EXPECT_EQ(back.maxRelError, o.maxRelError);  // infinity too (an inf or NaN output)
    EXPECT_EQ(back.nanElements, o.nanElements);
    EXPECT_EQ(back.notProfiled, o.notProfiled);
    EXPECT_EQ(back.seed, o.seed);
    EXPECT_EQ(back.rank, o.rank);
    EXPECT_EQ(back.folderWritten, o.folderWritten);
  }
}

TEST(RankByMeasuredTime, OnlyFoldersRankZeroWroteAreLeftAsTheyAre) {
  // A variant another rank timed has its code in that rank's scratch folder: rank 0 writes it.
  search::SearchResult result = resultWith({"here", "elsewhere"});
  const driver::ProfileRanking ranking =
      driver::rankByMeasuredTime(result,
                                 {{"here", 1.0, false, 0, 0, "", 1, 0, true},
                                  {"elsewhere", 2.0, false, 0, 0, "", 2, 1, false}},
                                 "");
  EXPECT_EQ(ranking.written, (std::set<std::string>{"here"}));
  EXPECT_EQ(namesOf(result), (std::vector<std::string>{"here", "elsewhere"}));
}

}  // namespace
}  // namespace mugraph::testing
