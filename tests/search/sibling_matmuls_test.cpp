// Widths with an odd factor (an LLM's MLP: 11008 = 172 · 64) are cut into tensor-core tiles
// that divide them exactly, and matmuls that read one operand and meet in an element-wise op
// (a gated MLP's gate and up projections) are computed by one kernel that streams both
// weights: at decode the weights bound it, and one kernel reads them with no launch between.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "graph/program_text.h"
#include "search/block_choices.h"
#include "search/dataflow.h"
#include "search/search_config.h"
#include "search/segment.h"
#include "search/superoptimize.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

TEST(GridCounts, AnExtentWithAnOddFactorGetsTheTensorCoreTilesThatDivideIt) {
  const graph::Program program = graph::parseProgramText(
      "program gemv\ninput X f16 [8, 4096]\ninput W f16 [4096, 11008]\n"
      "Y = matmul(X, W)\noutput Y\n",
      "gemv.mg");
  const Dataflow flow = buildDataflow(program);
  const int n = flow.tensors[flow.inputs[1]].dims[1][0];
  ASSERT_EQ(flow.vars[n].extent, 11008);
  const std::vector<BlockChoice> choices =
      enumerateBlockChoices(flow, analyzeSegment(flow, 0, 0), defaultConfig(ProgramKind::Gemm));
  std::set<int64_t> exactTiles, partialTiles;
  for (const BlockChoice& choice : choices) {
    const GridSplit* split = gridSplitOf(choice, n);
    if (!split) continue;
    if (split->tile > 0) {
      partialTiles.insert(split->tile);
      EXPECT_NE(11008 % split->tile, 0) << "a tile that divides the extent is declared partial";
    } else {
      ASSERT_EQ(11008 % split->count, 0);
      exactTiles.insert(11008 / split->count);
    }
  }
  // 64 · 172, 128 · 86, 256 · 43: whole tiles the power-of-two counts (at most 256 parts of
  // 43 columns) never give.
  for (int64_t tile : {32, 64, 128, 256}) EXPECT_TRUE(exactTiles.count(tile)) << tile;
  EXPECT_TRUE(exactTiles.count(43));
  EXPECT_TRUE(partialTiles.count(512));  // 22 parts, the last one of 256 columns
}

// RMSNorm and a gated MLP at decode batch, widths with an odd factor (2752 = 43 · 64).
TEST(SiblingMatmuls, AGatedMlpAtDecodeComputesGateAndUpInOneKernel) {
  const graph::Program program = graph::parseProgramText(
      "program gated_mlp\ninput X f16 [8, 1024]\ninput W1 f16 [1024, 2752]\n"
      "input W3 f16 [1024, 2752]\nN = rms_norm(X, dim=1)\n"
      "Y = mul(silu(matmul(N, W1)), matmul(N, W3))\noutput Y\n",
      "gated_mlp.mg");
  SearchOptions options = testing::quietOptions(program);
  // The program as written only (its norm computed once): the space stays small for a test.
  options.config.recomputePrologues = false;
  options.config.maxVariants = 1;
  const SearchResult result = superoptimize(program, options);
  ASSERT_EQ(result.variants.size(), 1u);
  const VerifiedVariant& best = result.variants.front();
  EXPECT_EQ(best.verification.level, "finite-field");
  EXPECT_LE(best.verification.falseAcceptBound, 1e-12);
  int fusedMatmuls = 0;
  for (const graph::KernelOp& kernel : best.schedule.graph.ops) {
    if (!kernel.block) continue;
    int matmuls = 0;
    for (const graph::BlockOp& op : kernel.block->ops) {
      matmuls += op.kind == graph::OpKind::Matmul ? 1 : 0;
    }
    fusedMatmuls = std::max(fusedMatmuls, matmuls);
    if (matmuls < 2) continue;
    // Whole tiles along the 2752 columns: the grid's count divides them into a multiple of 16.
    for (int64_t count : kernel.block->grid) {
      if (count > 1) {
        EXPECT_EQ(2752 % (16 * count), 0) << kernel.name;
      }
    }
  }
  EXPECT_EQ(fusedMatmuls, 2) << "gate and up in separate kernels";
}

}  // namespace
}  // namespace mugraph::search
