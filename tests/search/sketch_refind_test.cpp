// The sketches (search/sketches.h) put the known-fast kernels into the search space: the
// schedules that the retired schedule scripts wrote for the warpgroup GEMM, flash prefill on
// the warpgroup path and split-KV decode (schedules/*.warpgroups.json, *.split_kv.json) are
// candidates of `superoptimize` on their programs, including sizes no power-of-two tile
// divides: hash for hash for the GEMMs and prefill, the same kernels for decode. The generic space
// is narrowed to keep the test short; the sketches do not depend on it.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

#include "graph/files.h"
#include "graph/hash.h"
#include "plan/kernel_plan.h"
#include "plan/paths/warpgroup_mma_plan.h"
#include "plan/target.h"
#include "same_kernels.h"
#include "search/search_config.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

std::string shippedPath(const std::string& file) {
  return std::string(MUGRAPH_SOURCE_DIR) + "/schedules/" + file;
}

// The default space of the program's kind, with the generic enumeration cut down.
SearchConfig narrowConfig(const graph::Program& program) {
  SearchConfig config = defaultConfig(classifyProgram(program));
  config.maxKernels = 2;
  config.forloopCandidates = {1};
  config.maxGridBlocks = 16;
  config.candidatePool = 4;
  return config;
}

struct Refind {
  const char* program;
  const char* schedule;
  // The script's record matches the search's hash for hash. Else the kernels are the same,
  // the records differ: a one-iteration loop's accumulators, the fusion record and the order
  // of the partials (same_kernels.h).
  bool sameHash = true;
};

class SketchRefind : public ::testing::TestWithParam<Refind> {};

TEST_P(SketchRefind, TheShippedScheduleIsACandidate) {
  const graph::Program program = graph::loadProgram(shippedPath(GetParam().program));
  const graph::Schedule schedule = graph::loadSchedule(shippedPath(GetParam().schedule));
  const uint64_t hash = graph::scheduleHash(schedule);
  const uint64_t kernels = testing::sameKernelsHash(schedule);
  SearchConfig config = narrowConfig(program);
  const auto found = [&](const testing::Space& space) {
    if (space.hashes.count(hash)) return true;
    for (const Candidate& c : space.best) {
      if (testing::sameKernelsHash(c.schedule) == kernels) return true;
    }
    return false;
  };
  EXPECT_EQ(testing::wholeSpace(program, config).hashes.count(hash), GetParam().sameHash)
      << GetParam().schedule << " (" << graph::hashHex(hash) << ")";
  config.candidatePool = 100000;
  EXPECT_TRUE(found(testing::wholeSpace(program, config)))
      << GetParam().schedule << ": no candidate runs its kernels";
  config.sketches = false;
  EXPECT_FALSE(found(testing::wholeSpace(program, config)))
      << "the narrowed generic space alone finds " << GetParam().schedule;
}

INSTANTIATE_TEST_SUITE_P(
    Shipped, SketchRefind,
    ::testing::Values(Refind{"gemm_1000.mg", "gemm_1000.warpgroups.json"},
                      Refind{"gemm_1024_bt.mg", "gemm_1024_bt.warpgroups.json"},
                      Refind{"gemm_8192.mg", "gemm_8192.warpgroups.json"},
                      Refind{"mha_prefill_256.mg", "mha_prefill_256.warpgroups.json"},
                      Refind{"mha_prefill_1000.mg", "mha_prefill_1000.warpgroups.json"},
                      Refind{"llama_attention_512.mg", "llama_attention_512.warpgroups.json"},
                      Refind{"gqa_decode_1000.mg", "gqa_decode_1000.split_kv.json", false},
                      Refind{"gqa_decode_5000.mg", "gqa_decode_5000.split_kv.json", false},
                      Refind{"gqa_decode_12345.mg", "gqa_decode_12345.split_kv.json", false}),
    [](const ::testing::TestParamInfo<Refind>& info) {
      std::string name = info.param.schedule;
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

// The GEMM sketch pairs the blocks of consecutive row tiles (along grid x) or column tiles
// (along y) into clusters (pairs only, with two or three consumers: search/sketch_gemm.cpp
// says why); the plan multicasts the tile they share, B along x and A along y, and the
// kernel's name records the cluster.
TEST(SketchClusters, GemmCandidatesMulticastTheSharedTile) {
  const graph::Program program = graph::loadProgram(shippedPath("gemm_1000.mg"));
  SearchConfig config = narrowConfig(program);
  config.candidatePool = 100000;
  std::set<std::string> clusters;
  for (const Candidate& c : testing::wholeSpace(program, config).best) {
    const graph::KernelGraph& g = c.schedule.graph;
    for (size_t k = 0; k < g.ops.size(); ++k) {
      if (!g.ops[k].block || g.ops[k].block->clusterBlocks() == 1) continue;
      const graph::BlockGraph& block = *g.ops[k].block;
      const bool alongX = block.cluster[0] == 2;
      SCOPED_TRACE(g.ops[k].name);
      EXPECT_EQ(block.clusterBlocks(), 2);
      EXPECT_TRUE(alongX || block.cluster[1] == 2);
      EXPECT_NE(g.ops[k].name.find(alongX ? "_x2" : "_y2"), std::string::npos);
      EXPECT_EQ(g.ops[k].name.find("_c1_"), std::string::npos);  // two or three consumers
      const plan::KernelPlan planned =
          plan::planKernel(g, static_cast<int>(k), plan::targetByName("sm_90"));
      const plan::WarpgroupMmaPlan* wg = planned.as<plan::WarpgroupMmaPlan>();
      ASSERT_NE(wg, nullptr);
      EXPECT_EQ(wg->clusterBlocks, 2);
      EXPECT_EQ(wg->b.multicast, alongX ? 2 : 1);  // B's column tile, alike along x
      EXPECT_EQ(wg->a.multicast, alongX ? 1 : 2);  // A's row tile, alike along y
      clusters.insert(alongX ? "x" : "y");
    }
  }
  EXPECT_EQ(clusters, (std::set<std::string>{"x", "y"}));
}

}  // namespace
}  // namespace mugraph::search
