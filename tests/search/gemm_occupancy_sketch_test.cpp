// Occupancy in the warpgroup GEMM sketch: more blocks per multiprocessor are offered only for
// small tiles (up to 128 x 128) that outnumber the multiprocessors; with fewer tiles the block
// scheduler fills some multiprocessors twice and leaves others idle (measured:
// docs/measurements/bench_gemm_occupancy_s61_summary.md), and the cost model prices that.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/program_text.h"
#include "search/cost_model.h"
#include "search/dataflow.h"
#include "search/search_config.h"
#include "search/segment.h"
#include "search/sketches.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

graph::Program gemm(int64_t m, int64_t k, int64_t n) {
  const std::string shape = "[" + std::to_string(m) + ", " + std::to_string(k) + "]";
  return graph::parseProgramText("program g\ninput A f16 " + shape + "\ninput B f16 [" +
                                     std::to_string(k) + ", " + std::to_string(n) +
                                     "]\nC = matmul(A, B)\noutput C\n",
                                 "g.mg");
}

std::vector<BlockChoice> gemmSketches(const graph::Program& program) {
  const Dataflow flow = buildDataflow(program);
  const Segment segment = analyzeSegment(flow, 0, static_cast<int>(flow.ops.size()) - 1);
  return sketchChoices(flow, segment, defaultConfig(classifyProgram(program)));
}

int64_t tiles(const BlockChoice& choice) {
  int64_t count = 1;
  for (const GridSplit& g : choice.grid) count *= g.count;
  return count;
}

TEST(GemmOccupancySketch, OnlySmallTilesThatOutnumberTheMultiprocessorsShareOne) {
  const int64_t sms = defaultConfig(ProgramKind::Gemm).target->streamingMultiprocessors;
  int offered = 0;
  for (const BlockChoice& choice : gemmSketches(gemm(768, 768, 3072))) {
    if (choice.occupancy == 1) continue;
    ++offered;
    EXPECT_GT(tiles(choice), sms) << choice.sketch;
    EXPECT_NE(choice.sketch.find("_o" + std::to_string(choice.occupancy)), std::string::npos);
  }
  // 64 x 192 (192 tiles), 64 x 128 (288), 128 x 128 (144), ... at two and three blocks.
  EXPECT_GE(offered, 6);
  // 512^3 has 64 tiles of 64 x 64 at most: no occupancy above one.
  for (const BlockChoice& choice : gemmSketches(gemm(512, 512, 512))) {
    EXPECT_EQ(choice.occupancy, 1) << choice.sketch;
  }
}

}  // namespace
}  // namespace mugraph::search
