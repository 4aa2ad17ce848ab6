// Split-K in the warpgroup GEMM sketch (search/sketch_gemm.cpp): where a tile shape leaves most
// multiprocessors idle (a few hundred rows against a [4096, 4096] weight), the contraction is
// cut across the grid too, into equal parts of whole 64-deep steps, the blocks within one
// wave; the search's combine adds the f32 partials in a second kernel. Where the tiles fill
// the multiprocessors, or the depth does not cut into such parts, none is offered.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/program_text.h"
#include "plan/kernel_plan.h"
#include "plan/paths/warpgroup_mma_plan.h"
#include "plan/target.h"
#include "search/dataflow.h"
#include "search/search_config.h"
#include "search/segment.h"
#include "search/sketches.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

graph::Program splitKGemm(int64_t m, int64_t k, int64_t n) {
  return graph::parseProgramText("program g\ninput A f16 [" + std::to_string(m) + ", " +
                                     std::to_string(k) + "]\ninput B f16 [" + std::to_string(k) +
                                     ", " + std::to_string(n) +
                                     "] layout=transposed\nC = matmul(A, B)\noutput C\n",
                                 "g.mg");
}

std::vector<BlockChoice> splitKChoices(const graph::Program& program, int& kVar) {
  const Dataflow flow = buildDataflow(program);
  const Segment segment = analyzeSegment(flow, 0, static_cast<int>(flow.ops.size()) - 1);
  kVar = flow.ops[0].reducedVars.at(0);
  std::vector<BlockChoice> split;
  for (BlockChoice& c : sketchChoices(flow, segment, defaultConfig(classifyProgram(program)))) {
    if (c.reductionSplitVar >= 0) split.push_back(std::move(c));
  }
  return split;
}

TEST(GemmSplitKSketch, TheContractionIsCutWhereTheTilesLeaveMultiprocessorsIdle) {
  const int64_t sms = defaultConfig(ProgramKind::Gemm).target->streamingMultiprocessors;
  int kVar = -1;
  const std::vector<BlockChoice> choices = splitKChoices(splitKGemm(128, 4096, 4096), kVar);
  ASSERT_FALSE(choices.empty());
  bool wide = false;
  for (const BlockChoice& c : choices) {
    SCOPED_TRACE(c.sketch);
    EXPECT_EQ(c.reductionSplitVar, kVar);
    int64_t blocks = 1, parts = 0;
    for (const GridSplit& g : c.grid) {
      blocks *= g.count;
      if (g.var == kVar) parts = g.count;
    }
    ASSERT_GE(parts, 2);
    EXPECT_LE(blocks, sms);
    EXPECT_EQ(c.loopVar, kVar);
    EXPECT_EQ(c.forloop * parts * 64, 4096);  // equal parts of whole steps
    EXPECT_NE(c.sketch.find("_k" + std::to_string(parts)), std::string::npos);
    EXPECT_TRUE(c.sketchOnWarpgroupPath);
    wide = wide || c.sketch.find("128x256") != std::string::npos;
  }
  EXPECT_TRUE(wide);  // 16 tiles of 128 x 256, cut in 8
  // 4096^3: 256 tiles of 256 x 256 at the largest, more than the multiprocessors.
  EXPECT_TRUE(splitKChoices(splitKGemm(4096, 4096, 4096), kVar).empty());
  // A depth of 1000 has no equal parts of 64-deep steps.
  EXPECT_TRUE(splitKChoices(splitKGemm(128, 1000, 4096), kVar).empty());
}

// The search builds each choice as two kernels, the first on the warpgroup path writing f32
// partials, the second adding them, and the pool holds them.
TEST(GemmSplitKSketch, TheSearchPlansThePartialsOnTheWarpgroupPath) {
  const graph::Program program = splitKGemm(128, 2048, 2048);
  SearchConfig config = defaultConfig(classifyProgram(program));
  config.maxKernels = 2;
  config.forloopCandidates = {1};
  config.maxGridBlocks = 16;
  config.candidatePool = 100000;
  int found = 0;
  for (const Candidate& c : testing::wholeSpace(program, config).best) {
    const graph::KernelGraph& g = c.schedule.graph;
    if (g.ops.empty() || g.ops[0].name.find("wgmma_gemm") == std::string::npos ||
        g.ops[0].name.find("_k") == std::string::npos) {
      continue;
    }
    SCOPED_TRACE(g.ops[0].name);
    ++found;
    ASSERT_EQ(g.ops.size(), 2u);
    const plan::KernelPlan planned = plan::planKernel(g, 0, plan::targetByName("sm_90"));
    EXPECT_NE(planned.as<plan::WarpgroupMmaPlan>(), nullptr);
    ASSERT_EQ(g.ops[0].outputs.size(), 1u);
    EXPECT_EQ(g.tensors[g.ops[0].outputs[0]].dtype, graph::DType::F32);
    EXPECT_TRUE(testing::readsPartial(g, g.ops[1]));
  }
  EXPECT_GT(found, 0);
}

}  // namespace
}  // namespace mugraph::search
