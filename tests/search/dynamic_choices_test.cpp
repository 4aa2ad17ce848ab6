// Length-independent block choices (search/dynamic_choices.h): for a dynamic program every
// choice kept cuts each dynamic variable of its inputs by the grid or the loop alone, or as
// split-KV by both with fixed parts, with a declared tile, and the block graph built from it
// validates as a dynamic schedule's must.
#include <gtest/gtest.h>

#include <algorithm>

#include "graph/program_text.h"
#include "search/block_choices.h"
#include "search/build_block_graph.h"
#include "search/dataflow.h"
#include "search/dynamic_choices.h"
#include "search/search_config.h"
#include "search/segment.h"

namespace mugraph::search {
namespace {

const char* kDynamicGemm =
    "program g\ndim m in [1, 4096]\ninput A f16 [m, 128]\ninput B f16 [128, 64]\n"
    "C = matmul(A, B)\noutput C\n";

TEST(DynamicChoices, TheDataflowMarksTheDynamicVariable) {
  const Dataflow flow = buildDataflow(graph::parseProgramText(kDynamicGemm, "g.mg"));
  const int m = flow.tensors[flow.inputs[0]].dims[0][0];
  EXPECT_EQ(flow.vars[m].dynamicDim, 0);
  EXPECT_EQ(flow.vars[m].extent, 4096);
  const int k = flow.tensors[flow.inputs[0]].dims[1][0];
  EXPECT_EQ(flow.vars[k].dynamicDim, graph::kStaticDim);
}

TEST(DynamicChoices, EveryKeptChoiceDeclaresTheTileOfTheDynamicVariable) {
  const graph::Program program = graph::parseProgramText(kDynamicGemm, "g.mg");
  const Dataflow flow = buildDataflow(program);
  const Segment segment = analyzeSegment(flow, 0, 0);
  std::vector<BlockChoice> choices =
      enumerateBlockChoices(flow, segment, defaultConfig(ProgramKind::Gemm));
  const size_t all = choices.size();
  keepLengthIndependent(flow, segment, choices);
  ASSERT_FALSE(choices.empty());
  EXPECT_LT(choices.size(), all);  // the choices leaving m whole are gone
  const int m = flow.tensors[flow.inputs[0]].dims[0][0];
  for (const BlockChoice& choice : choices) {
    const GridSplit* split = gridSplitOf(choice, m);
    ASSERT_NE(split, nullptr);  // m is a map dim: only the grid cuts it
    EXPECT_GT(split->tile, 0);
    EXPECT_EQ((4096 + split->tile - 1) / split->tile, split->count);
    const BlockBuildResult built = buildBlockGraph(flow, segment, choice);
    if (!built.built) continue;
    for (const graph::BlockOp& op : built.built->block.ops) {
      if (op.kind == graph::OpKind::Input && op.kernelTensor == 0) {
        EXPECT_FALSE(op.tile.empty());
      }
    }
  }
}

// The limit on blocks per kernel holds at the range's shortest length: a projection of a few
// tokens wants a small tile of m and many parts of n (GEMV-like), which at the reference
// length (m = 4096) would be far more blocks than the limit. A static m = 4096 gets none.
TEST(DynamicChoices, TheBlockLimitHoldsAtTheShortestLengthSoSmallTilesOfManyColumnsAreChoices) {
  const auto tilesPastTheLimit = [](const char* text) {
    const graph::Program program = graph::parseProgramText(text, "p.mg");
    const Dataflow flow = buildDataflow(program);
    const Segment segment = analyzeSegment(flow, 0, 0);
    const SearchConfig config = defaultConfig(ProgramKind::Gemm);
    std::vector<BlockChoice> choices = enumerateBlockChoices(flow, segment, config);
    keepLengthIndependent(flow, segment, choices);
    int count = 0;
    for (const BlockChoice& choice : choices) {
      int64_t blocks = 1;
      for (const GridSplit& g : choice.grid) blocks *= g.count;
      if (blocks > config.maxGridBlocks) ++count;
    }
    return count;
  };
  EXPECT_GT(tilesPastTheLimit("program p\ndim m in [1, 4096]\ninput A f16 [m, 4096]\n"
                              "input B f16 [4096, 4096]\nC = matmul(A, B)\noutput C\n"),
            0);
  EXPECT_EQ(tilesPastTheLimit("program p\ninput A f16 [4096, 4096]\n"
                              "input B f16 [4096, 4096]\nC = matmul(A, B)\noutput C\n"),
            0);
}

// A split of a dynamic key length by the grid and the loop is kept only as split-KV: fixed
// parts, a declared loop tile, and a part of the reference's trips; the block graph built from
// it cuts the keys by both with the tile declared.
TEST(DynamicChoices, ASplitOfADynamicKeyLengthKeepsItsPartsAndDeclaresTheLoopsTile) {
  const graph::Program program = graph::parseProgramText(
      "program d\ndim s in [1, 8192]\ninput Q f16 [4, 4, 64]\n"
      "input K f16 [4, 64, s] layout=transposed\ninput V f16 [4, s, 64]\n"
      "A = matmul(Q, K)\nM = reduce_max(A, dim=2)\nE = exp(sub(A, M))\n"
      "S = reduce_sum(E, dim=2)\nN = matmul(E, V)\noutput S\noutput N\n",
      "d.mg");
  const Dataflow flow = buildDataflow(program);
  const Segment segment = analyzeSegment(flow, 0, static_cast<int>(flow.ops.size()) - 1);
  const int s = flow.tensors[flow.inputs[1]].dims[2][0];
  ASSERT_EQ(flow.vars[s].dynamicDim, 0);
  BlockChoice split;
  split.grid = {GridSplit{flow.tensors[flow.inputs[0]].dims[0][0], 4, 0}, GridSplit{s, 8, 0}};
  split.reductionSplitVar = s;
  split.loopVar = s;
  split.forloop = 16;
  BlockChoice withoutLoop = split;
  withoutLoop.loopVar = -1;
  withoutLoop.forloop = 1;
  std::vector<BlockChoice> choices{split, withoutLoop};
  keepLengthIndependent(flow, segment, choices);
  ASSERT_EQ(choices.size(), 1u);  // a split without the loop would need parts per length
  EXPECT_EQ(choices[0].loopTile, 64);  // 8192 / (8 parts · 16 trips)
  EXPECT_EQ(gridSplitOf(choices[0], s)->tile, 16 * 64);
  const BlockBuildResult built = buildBlockGraph(flow, segment, choices[0]);
  ASSERT_TRUE(built.built);
  for (const graph::BlockOp& op : built.built->block.ops) {
    if (op.kind != graph::OpKind::Input || op.fmap == graph::kReplicated) continue;
    EXPECT_EQ(op.tile.at(static_cast<size_t>(op.fmap)), 64);
    EXPECT_NE(std::find(op.imap.begin(), op.imap.end(), op.fmap), op.imap.end());
  }
}

TEST(DynamicChoices, AStaticProgramsChoicesPassUnchanged) {
  const graph::Program program = graph::parseProgramText(
      "program g\ninput A f16 [4096, 128]\ninput B f16 [128, 64]\nC = matmul(A, B)\noutput C\n",
      "g.mg");
  const Dataflow flow = buildDataflow(program);
  const Segment segment = analyzeSegment(flow, 0, 0);
  const std::vector<BlockChoice> all =
      enumerateBlockChoices(flow, segment, defaultConfig(ProgramKind::Gemm));
  std::vector<BlockChoice> kept = all;
  keepLengthIndependent(flow, segment, kept);
  ASSERT_EQ(kept.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_TRUE(kept[i].sameSplits(all[i]));
}

}  // namespace
}  // namespace mugraph::search
