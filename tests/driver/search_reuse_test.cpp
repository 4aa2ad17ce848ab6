// A model's subgraphs equal up to names share one search (driver/search_reuse.h).
#include <gtest/gtest.h>

#include <string>

#include "driver/search_reuse.h"
#include "driver/superoptimize.h"
#include "graph/program_text.h"
#include "graph/validate.h"

namespace mugraph::testing {
namespace {

graph::Program layer(const std::string& prefix, int rows = 64) {
  return graph::parseProgramText("program " + prefix + "_layer\ninput " + prefix + "_x f16 [" +
                                     std::to_string(rows) + ", 128]\ninput " + prefix +
                                     "_w f16 [128, 64]\n" + prefix + "_h = matmul(" + prefix +
                                     "_x, " + prefix + "_w)\n" + prefix + "_y = silu(" + prefix +
                                     "_h)\noutput " + prefix + "_y\n",
                                 "search_reuse_test");
}

// A quick search of the layer: two threads, two kernels, no progress line.
driver::RunOptions smallSearch(int maxVariants) {
  driver::RunOptions options;
  options.threads = 2;
  options.maxKernels = 2;
  options.maxVariants = maxVariants;
  options.progress = false;
  return options;
}

TEST(SearchReuse, ProgramsEqualUpToNamesShareAKeyAndOthersDoNot) {
  EXPECT_EQ(driver::reuseKey(layer("a")), driver::reuseKey(layer("b")));
  EXPECT_NE(driver::reuseKey(layer("a")), driver::reuseKey(layer("a", 32)));
}

TEST(SearchReuse, TheSecondLayerTakesTheFirstLayersSearchInItsOwnNames) {
  const graph::Program first = layer("first");
  const graph::Program second = layer("second");
  const driver::RunOptions options = smallSearch(4);
  driver::SearchReuse reuse;
  const driver::ProgramRun searched = driver::superoptimizeProgram(first, options, nullptr, &reuse);
  ASSERT_FALSE(searched.result.variants.empty());
  ASSERT_NE(reuse.find(first), nullptr);
  EXPECT_EQ(reuse.find(second), nullptr);  // kept for exactly the program searched

  const driver::ProgramRun taken =
      driver::superoptimizeProgram(second, options, nullptr, &reuse, &first);
  EXPECT_EQ(taken.summary.at("search_reused_from"), "first_layer");
  ASSERT_EQ(taken.result.variants.size(), searched.result.variants.size());
  for (size_t i = 0; i < taken.result.variants.size(); ++i) {
    const search::VerifiedVariant& v = taken.result.variants[i];
    EXPECT_NO_THROW(graph::validateSchedule(v.schedule)) << v.name;
    EXPECT_EQ(v.schedule.program, second);
    EXPECT_EQ(v.schedule.name.rfind("second_layer.v", 0), 0u) << v.schedule.name;
    for (const graph::TensorDesc& t : v.schedule.graph.tensors) {
      EXPECT_EQ(t.name.find("first_"), std::string::npos) << v.name << ": " << t.name;
    }
    // One of the first layer's schedules, renamed: renaming back gives it again (but for the
    // schedule's own name, which follows the hash of what it names), at the same cost. (The
    // order may differ among equal costs: ties are broken by hash.)
    const graph::Schedule back = driver::renamedVariant(v, second, first).schedule;
    int matches = 0;
    for (const search::VerifiedVariant& original : searched.result.variants) {
      graph::Schedule named = back;
      named.name = original.schedule.name;
      named.graph.name = original.schedule.graph.name;
      if (named == original.schedule) {
        ++matches;
        EXPECT_EQ(v.cost.microseconds, original.cost.microseconds) << v.name;
      }
    }
    EXPECT_EQ(matches, 1) << v.name;
  }
}

// A tensor the search makes is named after the program tensor it derives from (a split-K
// partial "h_part"): it is renamed with that tensor; a name that only contains a program
// tensor's name is kept.
TEST(SearchReuse, ATensorNamedAfterAProgramTensorIsRenamedWithIt) {
  const graph::Program first = layer("first");
  const graph::Program second = layer("second");
  const driver::RunOptions options = smallSearch(1);
  const driver::ProgramRun searched = driver::superoptimizeProgram(first, options, nullptr);
  ASSERT_FALSE(searched.result.variants.empty());
  search::VerifiedVariant variant = searched.result.variants.front();
  graph::TensorDesc derived = variant.schedule.graph.tensors.front();
  derived.name = "first_h_part";
  graph::TensorDesc unrelated = derived;
  unrelated.name = "scratch_first_h";
  variant.schedule.graph.tensors.push_back(derived);
  variant.schedule.graph.tensors.push_back(unrelated);
  const search::VerifiedVariant renamed = driver::renamedVariant(variant, first, second);
  const std::vector<graph::TensorDesc>& tensors = renamed.schedule.graph.tensors;
  EXPECT_EQ(tensors[tensors.size() - 2].name, "second_h_part");
  EXPECT_EQ(tensors.back().name, "scratch_first_h");
}

}  // namespace
}  // namespace mugraph::testing
