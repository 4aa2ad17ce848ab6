// Causal prefill (causal_mask on the scores, graph/ops.h) in the search space: the flash sketch
// on the warpgroup path is a candidate for multi-head attention and for GQA with the query
// heads folded into the rows (the mask repeating per sequence), and the kernel the plan gives
// it is warpgroup attention. The generic space is narrowed to keep the test short.
#include <gtest/gtest.h>

#include <string>

#include "graph/program_text.h"
#include "plan/kernel_plan.h"
#include "search/search_config.h"
#include "search/superoptimize.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

graph::Program causalPrefill(int64_t heads, int64_t rows, int64_t keys, int64_t queries,
                             const std::string& outputLayout = "") {
  const std::string q = "[" + std::to_string(heads) + ", " + std::to_string(rows) + ", 128]";
  const std::string kv = std::to_string(heads) + ", " + std::to_string(keys);
  const std::string attr = queries > 0 ? ", queries=" + std::to_string(queries) : "";
  return graph::parseProgramText(
      "program causal\n"
      "input Q f16 " +
          q +
          "\n"
          "input K f16 [" +
          std::to_string(heads) + ", 128, " + std::to_string(keys) +
          "] layout=transposed\n"
          "input V f16 [" +
          kv +
          ", 128]\n"
          "A = causal_mask(scale(matmul(Q, K), c=0.08838834764831843)" +
          attr +
          ")\n"
          "M = reduce_max(A, dim=2)\n"
          "E = exp(sub(A, M))\n"
          "S = reduce_sum(E, dim=2)\n"
          "O = matmul(div(E, S), V)\n"
          "output O" +
          (outputLayout.empty() ? "" : " layout=" + outputLayout) + "\n",
      "causal.mg");
}

// One kernel whose name carries the warpgroup flash sketch, planned on the warpgroup
// attention path.
bool hasWarpgroupFlash(const testing::Space& space, const graph::Program& program) {
  const SearchConfig config = defaultConfig(classifyProgram(program));
  for (const Candidate& c : space.best) {
    const graph::KernelGraph& g = c.schedule.graph;
    if (g.ops.size() != 1 || g.ops[0].name.find("flash_wgmma") == std::string::npos) continue;
    const plan::KernelPlan planned = plan::planKernel(g, 0, *config.target);
    if (planned.ring() != nullptr) return true;
  }
  return false;
}

TEST(CausalSketch, WarpgroupFlashIsACandidateForCausalMhaAndFoldedGqa) {
  for (const graph::Program& program :
       {causalPrefill(4, 512, 512, 0), causalPrefill(2, 4 * 256, 256, 256)}) {
    SearchConfig config = defaultConfig(classifyProgram(program));
    config.maxKernels = 1;
    config.forloopCandidates = {1};
    config.maxGridBlocks = 16;
    config.candidatePool = 100000;
    EXPECT_TRUE(hasWarpgroupFlash(testing::wholeSpace(program, config), program))
        << graph::programToText(program);
  }
}

// Scores with an added tensor (an eager model's mask, ALiBi's distances), soft-capped by tanh
// as Gemma 2 does: the bias is read in S's layout by the warpgroup flash kernel, whether it
// holds a row per query ([1, rows, keys], one for every head) or one row for every query
// ([heads, 1, keys]), and every op of the chain stays in registers.
TEST(CausalSketch, AnAddedBiasKeepsTheWarpgroupFlash) {
  for (const char* bias : {"[1, 512, 512]", "[4, 1, 512]"}) {
    const graph::Program program = graph::parseProgramText(
        std::string("program biased\ninput Q f16 [4, 512, 128]\n"
                    "input K f16 [4, 128, 512] layout=transposed\ninput V f16 [4, 512, 128]\n"
                    "input B f16 ") +
            bias +
            "\nA = add(scale(tanh(scale(matmul(Q, K), c=0.002)), c=50), B)\n"
            "M = reduce_max(A, dim=2)\nE = exp(sub(A, M))\nS = reduce_sum(E, dim=2)\n"
            "O = matmul(div(E, S), V)\noutput O\n",
        "biased.mg");
    SearchConfig config = defaultConfig(classifyProgram(program));
    config.maxKernels = 1;
    config.forloopCandidates = {1};
    config.maxGridBlocks = 16;
    config.candidatePool = 100000;
    EXPECT_TRUE(hasWarpgroupFlash(testing::wholeSpace(program, config), program)) << bias;
  }
}

// The result stored heads_transposed ([h, s, d] laid out [s, h, d], as the next projection
// reads it): the warpgroup flash kernel is still a candidate, and every variant the search
// reports stores the output so and is verified.
TEST(CausalSketch, AResultStoredHeadsTransposedKeepsTheWarpgroupFlashAndItsLayout) {
  const graph::Program program = causalPrefill(4, 512, 512, 0, "heads_transposed");
  SearchConfig config = defaultConfig(classifyProgram(program));
  config.maxKernels = 1;
  config.forloopCandidates = {1};
  config.maxGridBlocks = 16;
  config.candidatePool = 100000;
  EXPECT_TRUE(hasWarpgroupFlash(testing::wholeSpace(program, config), program));

  const graph::Program small = causalPrefill(2, 128, 128, 0, "heads_transposed");
  SearchOptions options = testing::quietOptions(small);
  options.config.maxKernels = 2;
  options.config.maxVariants = 3;
  const SearchResult result = superoptimize(small, options);
  ASSERT_FALSE(result.variants.empty());
  for (const VerifiedVariant& v : result.variants) {
    const graph::KernelGraph& g = v.schedule.graph;
    ASSERT_EQ(g.outputs.size(), 1u);
    EXPECT_EQ(g.tensors[g.outputs[0]].layout, graph::Layout::HeadsTransposed) << v.name;
  }
}

// A program searched in several forms (attention written without the max subtraction gets
// the safe form, whose tensors are numbered otherwise): each form's candidates store the
// output as the program does, so the whole program gets its variants, none joined from pieces.
TEST(CausalSketch, EveryFormOfAProgramStoresItsOutputAsTheProgramDoes) {
  const graph::Program program = graph::parseProgramText(
      "program unsafe\ninput Q f16 [2, 32, 16]\ninput K f16 [2, 16, 256] layout=transposed\n"
      "input V f16 [2, 256, 16]\nA = matmul(Q, K)\nE = exp(A)\nS = reduce_sum(E, dim=2)\n"
      "O = matmul(div(E, S), V)\noutput O layout=heads_transposed\n",
      "unsafe.mg");
  SearchOptions options = testing::quietOptions(program);
  options.config.maxKernels = 3;
  options.config.maxVariants = 4;
  const SearchResult result = superoptimize(program, options);
  EXPECT_GT(result.summary.forms, 1);
  ASSERT_FALSE(result.variants.empty());
  for (const VerifiedVariant& v : result.variants) {
    EXPECT_EQ(v.joinedFromPieces, 0) << v.name;
    const graph::KernelGraph& g = v.schedule.graph;
    EXPECT_EQ(g.tensors[g.outputs[0]].layout, graph::Layout::HeadsTransposed) << v.name;
  }
}

}  // namespace
}  // namespace mugraph::search
