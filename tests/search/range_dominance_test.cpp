// Dominance over a dynamic program's range (search/enumerate_kernel_graphs.h): siblings that
// leave the same future are compared by their kernels' estimates, which for a dynamic program
// are at the reference length (every dim at its max). A sketch family's members that win the
// short lengths lose there, so a sketch child is also kept when it is among the cheapest few
// of its future at some ranking length.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "dynamic_schedules.h"
#include "graph/program_text.h"
#include "search/range_cost.h"
#include "search/search_config.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

Child member(double reference, std::vector<double> range = {}) {
  Child child;
  child.kernelMicroseconds = reference;
  child.future = "f";
  child.rangeMicroseconds = std::move(range);
  return child;
}

TEST(RangeDominance, AMemberCheapestAtOneLengthIsKeptThoughLastAtTheReference) {
  std::vector<std::optional<Child>> children;
  children.push_back(member(1, {9, 9, 1}));
  children.push_back(member(2, {8, 8, 2}));
  children.push_back(member(3, {7, 7, 3}));
  children.push_back(member(4, {6, 6, 4}));
  children.push_back(member(5, {1, 2, 5}));  // the cheapest at the short lengths
  children.push_back(member(6));             // not costed over the range: by the reference alone
  const std::vector<bool> keep = undominated(children, 2);
  EXPECT_EQ(keep, (std::vector<bool>{true, true, false, true, true, false}));
}

TEST(RangeDominance, StaticChildrenKeepTheCheapestAtTheReference) {
  std::vector<std::optional<Child>> children;
  for (double us : {3.0, 1.0, 2.0}) children.push_back(member(us));
  EXPECT_EQ(undominated(children, 2), (std::vector<bool>{false, true, true}));
}

// A dynamic decode's first kernels: the split-KV sketch's members are costed at every ranking
// length, and of each future (its count of parts) the cheapest at each length is explored,
// which at the reference length alone would not be.
TEST(RangeDominance, SplitKvMembersThatWinShortLengthsAreExplored) {
  const graph::Program program =
      graph::parseProgramText(mugraph::testing::kDynamicDecodeText, "decode_dynamic.mg");
  const SearchConfig config = defaultConfig(classifyProgram(program));
  const std::vector<ProgramForm> forms = programForms(program, config.maxRewriteForms);
  std::vector<verify::AbstractExprRef> targets;
  for (const ProgramForm& form : forms) {
    const auto terms = verify::abstractExpressions(form.program);
    for (graph::TensorId t : form.program.outputs) targets.push_back(terms.at(t));
  }
  verify::SubexpressionOracle oracle(targets);
  const KernelGraphEnumerator enumerator(program, config, oracle);
  const size_t lengths = rankingLengths(program).size();

  int keptOnlyForTheRange = 0;
  for (const ProgramForm& form : forms) {
    const PartialSchedule root = enumerator.start(form.program);
    std::vector<std::optional<Child>> children;
    ExploreStats stats;
    for (const Step& step : enumerator.steps(root)) {
      children.push_back(enumerator.child(root, step, stats));
    }
    const std::vector<bool> keep = undominated(children, config.childrenPerFuture);
    // future -> the split-KV sketch members with it
    std::map<std::string, std::vector<size_t>> splitKv;
    for (size_t i = 0; i < children.size(); ++i) {
      if (!children[i] || children[i]->future.empty()) continue;
      const std::string& name = children[i]->state.builder.graph().ops.back().name;
      if (name.find("split_kv") == std::string::npos) continue;
      ASSERT_EQ(children[i]->rangeMicroseconds.size(), lengths) << name;
      for (double us : children[i]->rangeMicroseconds) EXPECT_TRUE(std::isfinite(us)) << name;
      splitKv[children[i]->future].push_back(i);
    }
    for (const auto& [future, members] : splitKv) {
      for (size_t l = 0; l < lengths; ++l) {
        size_t cheapest = members.front();
        for (size_t i : members) {
          if (children[i]->rangeMicroseconds[l] < children[cheapest]->rangeMicroseconds[l]) {
            cheapest = i;
          }
        }
        EXPECT_TRUE(keep[cheapest]) << children[cheapest]->state.builder.graph().ops.back().name;
      }
      // Kept though not among the cheapest few at the reference length.
      for (size_t i : members) {
        int cheaperAtReference = 0;
        for (size_t j : members) {
          cheaperAtReference += children[j]->kernelMicroseconds < children[i]->kernelMicroseconds;
        }
        keptOnlyForTheRange += keep[i] && cheaperAtReference >= config.childrenPerFuture;
      }
    }
  }
  EXPECT_GT(keptOnlyForTheRange, 0);
}

}  // namespace
}  // namespace mugraph::search