// The variants verified (and so measured by --profile) cover the tilings the cost model
// estimates near the best, not only the consumer and cluster choices of its first tiling: the
// model's error between two tilings of one family is tens of percent.
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <vector>

#include "graph/program_text.h"
#include "search/candidate_pool.h"
#include "search/superoptimize.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

// A candidate of `blocks.size()` block-graph kernels with those grids along x.
Candidate candidate(double cost, std::vector<int64_t> blocks) {
  Candidate c;
  c.cost = cost;
  for (int64_t x : blocks) {
    graph::KernelOp kernel;
    kernel.kind = graph::OpKind::BlockGraph;
    kernel.block = graph::BlockGraph{};
    kernel.block->grid = {x, 1, 1};
    c.schedule.graph.ops.push_back(kernel);
  }
  return c;
}

TEST(VerifiedTilings, OrderTakesShapesAndTilingsNearTheBestInTurnThenTheRest) {
  std::vector<Candidate> pool = {
      candidate(10, {96}),          // 0: the best, and the best one-pass schedule
      candidate(10.5, {96}),        // 1: the same tiling (another consumer count)
      candidate(12, {72}),          // 2: another tiling within 2x
      candidate(13, {64}),          // 3: another tiling within 2x
      candidate(15, {128, 32, 1}),  // 4: the best three-kernel schedule
      candidate(25, {144}),         // 5: another tiling, past 2x
      candidate(90, {576, 512}),    // 6: the best two-kernel schedule
      candidate(200, {64, 8})       // 7: the best two-kernel split
  };
  pool[7].gridSplits = 1;
  EXPECT_EQ(verificationOrder(pool, {}), (std::vector<size_t>{0, 2, 4, 3, 6, 7, 1, 5}));
  // Positions a dynamic program places first come first, once.
  EXPECT_EQ(verificationOrder(pool, {5, 2}), (std::vector<size_t>{5, 2, 0, 3, 4, 6, 7, 1}));
}

TEST(VerifiedTilings, AMidSizeGemmVerifiesSeveralTilingsNearTheBest) {
  const graph::Program program = graph::parseProgramText(
      "program gemm_768x3072x768\ninput A f16 [768, 768]\ninput B f16 [768, 3072]\n"
      "C = matmul(A, B)\noutput C\n",
      "gemm.mg");
  SearchOptions options = testing::quietOptions(program);
  options.config.maxVariants = 8;
  const SearchResult result = superoptimize(program, options);
  ASSERT_EQ(result.variants.size(), 8u);
  std::set<std::vector<std::array<int64_t, graph::kGridAxes>>> tilings;
  const double best = result.variants.front().cost.microseconds;
  for (const VerifiedVariant& v : result.variants) {
    EXPECT_GE(v.cost.microseconds, best);  // the report stays ordered by estimate
    std::vector<std::array<int64_t, graph::kGridAxes>> grids;
    for (const graph::KernelOp& kernel : v.schedule.graph.ops) {
      if (kernel.block) grids.push_back(kernel.block->grid);
    }
    if (v.cost.microseconds <= 2 * best) tilings.insert(grids);
  }
  // 96, 72, 64, 144 and 192 tiles of the warpgroup GEMM, all estimated within 2x of the best.
  EXPECT_GE(tilings.size(), 4u);
}

}  // namespace
}  // namespace mugraph::search
