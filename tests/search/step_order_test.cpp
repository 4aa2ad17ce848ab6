// The order in which the enumerator offers a state's steps (search/enumerate_kernel_graphs.h):
// the known-fast sketch families first, then the longest segments. A search stopped by its time
// limit has then met the fused kernels: a softmax's one-kernel form (half the estimated cost of
// its two-kernel forms) was not reached in 30 s when the one-op segments came first.
#include <gtest/gtest.h>

#include <vector>

#include "graph/program_text.h"
#include "search/search_config.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

TEST(StepOrder, LongerSegmentsComeBeforeShorterOnes) {
  const graph::Program program = graph::parseProgramText(
      "program softmax\ninput S f32 [4, 64, 512]\nA = scale(S, c=0.125)\n"
      "M = reduce_max(A, dim=2)\nE = exp(sub(A, M))\nZ = reduce_sum(E, dim=2)\n"
      "P = div(E, Z)\noutput P\n",
      "softmax.mg");
  const SearchConfig config = defaultConfig(classifyProgram(program));
  verify::SubexpressionOracle oracle(
      {verify::abstractExpressions(program).at(program.outputs.at(0))});
  const KernelGraphEnumerator enumerator(program, config, oracle);
  const PartialSchedule root = enumerator.start(program);
  const std::vector<Step> steps = enumerator.steps(root);
  std::vector<int> lasts;  // of the block-graph steps outside the sketch families
  for (const Step& step : steps) {
    if (step.choice >= 0 && step.block.sketch.empty()) lasts.push_back(step.last);
  }
  ASSERT_FALSE(lasts.empty());
  EXPECT_EQ(lasts.front(), static_cast<int>(root.flow.ops.size()) - 1)  // the whole softmax
      << "first block-graph step ends at op " << lasts.front();
  for (size_t i = 1; i < lasts.size(); ++i) EXPECT_LE(lasts[i], lasts[i - 1]) << "step " << i;
}

}  // namespace
}  // namespace mugraph::search
