// Decode over a short key length in the search space: the general path's flash sketch walks
// the keys in tiles of 16 and 32 too (a 64-key tile would hold a 64-position cache in one
// iteration, so the one-pass sketch had nothing for it). Each such candidate is one kernel, a
// block per head, whose loop says so. The generic space is narrowed to keep the test short.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "graph/program_text.h"
#include "search/dataflow.h"
#include "search/search_config.h"
#include "search/segment.h"
#include "search/sketches.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

graph::Program shortDecode() {
  return graph::parseProgramText(
      "program short_decode\n"
      "input Q f16 [8, 4, 128]\n"
      "input K f16 [8, 128, 64] layout=transposed\n"
      "input V f16 [8, 64, 128]\n"
      "A = scale(matmul(Q, K), c=0.08838834764831843)\n"
      "M = reduce_max(A, dim=2)\n"
      "E = exp(sub(A, M))\n"
      "S = reduce_sum(E, dim=2)\n"
      "O = matmul(div(E, S), V)\n"
      "output O\n",
      "short_decode.mg");
}

TEST(ShortDecodeSketch, SmallKeyTilesWalkAShortCache) {
  const graph::Program program = shortDecode();
  SearchConfig config = defaultConfig(classifyProgram(program));
  config.maxKernels = 1;
  config.forloopCandidates = {1};
  config.maxGridBlocks = 16;
  config.candidatePool = 100000;
  // sketch name -> (blocks, trips) of the one-kernel candidate carrying it
  std::map<std::string, std::pair<int64_t, int64_t>> found;
  for (const Candidate& c : testing::wholeSpace(program, config).best) {
    const graph::KernelGraph& g = c.schedule.graph;
    if (g.ops.size() != 1 || !g.ops[0].block) continue;
    const std::string& name = g.ops[0].name;
    const size_t at = name.find("flash_q64_kv");
    if (at == std::string::npos) continue;
    found[name.substr(at)] = {g.ops[0].block->blocks(), g.ops[0].block->forloop};
  }
  const std::map<std::string, std::pair<int64_t, int64_t>> expected{{"flash_q64_kv16", {8, 4}},
                                                                    {"flash_q64_kv32", {8, 2}}};
  for (const auto& [sketch, shape] : expected) {
    SCOPED_TRACE(sketch);
    ASSERT_TRUE(found.count(sketch));
    EXPECT_EQ(found.at(sketch), shape);
  }
  // 64 keys in tiles of 64 would run once: no loop, so no flash sketch of that tile.
  EXPECT_FALSE(found.count("flash_q64_kv64"));
}

// Decode of a few KV heads gets a block per head, far fewer than the multiprocessors: the
// flash sketch also cuts the value columns over the grid (the static search's fastest kernel
// at one position cuts them 8 ways), with the loop over the keys kept, so a dynamic program's
// short lengths get those blocks too. With a block per multiprocessor already, it does not.
// The sketches' block choices for the whole program as one segment.
std::vector<BlockChoice> wholeProgramSketches(const graph::Program& program) {
  const Dataflow flow = buildDataflow(program);
  const Segment segment = analyzeSegment(flow, 0, static_cast<int>(flow.ops.size()) - 1);
  return sketchChoices(flow, segment, defaultConfig(classifyProgram(program)));
}

int columnParts(const graph::Program& program, std::map<std::string, int64_t>* blocks) {
  int found = 0;
  for (const BlockChoice& choice : wholeProgramSketches(program)) {
    if (choice.sketch.rfind("flash_q", 0) != 0 || choice.sketch.find("_v") == std::string::npos) {
      continue;
    }
    ++found;
    int64_t count = 1;
    for (const GridSplit& g : choice.grid) count *= g.count;
    if (blocks) (*blocks)[choice.sketch] = count;
    EXPECT_GT(choice.forloop, 1) << choice.sketch;
  }
  return found;
}

// A safe-softmax decode of `heads` KV heads of 4 query rows each over `keys` positions (a
// number, or a dim that `dims` declares).
graph::Program decodeOf(int heads, const std::string& keys, const std::string& dims = "") {
  const std::string h = std::to_string(heads);
  const std::string inputs = "input Q f16 [" + h + ", 4, 128]\n" + "input K f16 [" + h + ", 128, " +
                             keys + "] layout=transposed\n" + "input V f16 [" + h + ", " + keys +
                             ", 128]\n";
  const std::string body =
      "A = scale(matmul(Q, K), c=0.088)\nM = reduce_max(A, dim=2)\nE = exp(sub(A, M))\n"
      "S = reduce_sum(E, dim=2)\nO = matmul(div(E, S), V)\noutput O\n";
  return graph::parseProgramText("program d\n" + dims + inputs + body, "d.mg");
}

TEST(ShortDecodeSketch, FewHeadsCutTheValueColumnsOverTheGrid) {
  std::map<std::string, int64_t> blocks;
  EXPECT_GT(columnParts(decodeOf(8, "s", "dim s in [1, 4096]\n"), &blocks), 0);
  EXPECT_EQ(blocks.at("flash_q64_kv32_v8"), 64);  // 8 heads x 8 column tiles of 16
  EXPECT_EQ(blocks.at("flash_q64_kv16_v2"), 16);
  // 256 heads: a block per multiprocessor and more already.
  EXPECT_EQ(columnParts(decodeOf(256, "512"), nullptr), 0);
}

// Decode with one query row per KV head (multi-head attention: GPT-2, Phi, Llama 2 7B): the
// query dim is a dim of one, which once left the pattern without a query variable, so no
// attention sketch applied and the search kept Q·K, the softmax and P·V in separate kernels.
TEST(ShortDecodeSketch, OneQueryRowPerHeadGetsTheFlashSketches) {
  const graph::Program program = graph::parseProgramText(
      "program mha_decode\ninput Q f16 [32, 1, 96]\ninput K f16 [32, 96, 4096] layout=transposed\n"
      "input V f16 [32, 4096, 96]\nA = scale(matmul(Q, K), c=0.1)\nM = reduce_max(A, dim=2)\n"
      "E = exp(sub(A, M))\nS = reduce_sum(E, dim=2)\nO = matmul(div(E, S), V)\noutput O\n",
      "mha_decode.mg");
  std::map<std::string, int64_t> blocks;  // sketch -> blocks
  for (const BlockChoice& choice : wholeProgramSketches(program)) {
    int64_t count = 1;
    for (const GridSplit& g : choice.grid) count *= g.count;
    blocks[choice.sketch] = count;
  }
  for (const char* sketch :
       {"flash_q64_kv16", "flash_q64_kv32", "flash_q64_kv64", "flash_q64_kv128"}) {
    SCOPED_TRACE(sketch);
    ASSERT_TRUE(blocks.count(sketch));
    EXPECT_EQ(blocks.at(sketch), 32);  // a block per head, its query row padded to a tile
  }
}

}  // namespace
}  // namespace mugraph::search
