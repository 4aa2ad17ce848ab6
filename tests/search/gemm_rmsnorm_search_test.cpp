// GEMM 1024³: the search finds tiled schedules with a for-loop over K, the first one on the
// sm_90 warpgroup path. RMSNorm + matmul: it
// finds a fused schedule, one block graph doing both the norm and the matmul. Both at real
// shapes, every reported variant verified.
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "graph/program_text.h"
#include "graph/tile_splits.h"
#include "plan/kernel_plan.h"
#include "search/builtin_programs.h"
#include "search/superoptimize.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

bool isTiledWithLoopOverK(const graph::Schedule& s) {
  if (s.graph.ops.size() != 1 || !s.graph.ops[0].block) return false;
  const graph::BlockGraph& block = *s.graph.ops[0].block;
  if (block.forloop <= 1 || block.blocks() <= 1) return false;
  bool aLoopsOverK = false, bLoopsOverK = false;
  for (const graph::BlockOp& op : block.ops) {
    if (op.kind != graph::OpKind::Input) continue;
    if (op.kernelTensor == 0) aLoopsOverK = op.fmap == 1;
    if (op.kernelTensor == 1) bLoopsOverK = op.fmap == 0;
  }
  return aLoopsOverK && bLoopsOverK;
}

TEST(GemmSearch, FindsTiledSchedulesWithALoopOverK) {
  const graph::Program program = *builtinProgram("gemm");
  SearchOptions options = testing::quietOptions(program);
  options.config.maxVariants = 2;
  const SearchResult result = superoptimize(program, options);
  ASSERT_FALSE(result.variants.empty());
  bool tiled = false;
  for (const VerifiedVariant& v : result.variants) {
    EXPECT_EQ(v.verification.level, "finite-field");
    EXPECT_LE(v.verification.falseAcceptBound, 1e-12);
    tiled = tiled || isTiledWithLoopOverK(v.schedule);
  }
  EXPECT_TRUE(tiled);
  // On sm_90 the cost model puts the warpgroup path (wgmma fed by bulk tensor copies) first:
  // it measured fastest (docs/measurements/cost_calibration_h100.json).
  const graph::Schedule& first = result.variants.front().schedule;
  ASSERT_TRUE(isTiledWithLoopOverK(first));
  EXPECT_EQ(options.config.target->name, "sm_90");
  EXPECT_TRUE(
      plan::planKernel(first.graph, 0, *options.config.target).as<plan::WarpgroupMmaPlan>());
}

// Sizes no power-of-two tile divides (partial tiles, graph/tile_splits.h): the search cuts
// them into power-of-two tiles with a partial last one, chosen for the hardware, and verifies
// those schedules in the finite field like any other.
TEST(GemmSearch, CutsSizesNoTileDividesIntoPartialTiles) {
  graph::GraphBuilder builder("gemm_odd");
  const graph::TensorId a = builder.input("A", graph::DType::F16, {200, 136});
  const graph::TensorId b = builder.input("B", graph::DType::F16, {136, 232});
  builder.output(builder.op(graph::OpKind::Matmul, {a, b}, {}, "C"));
  const graph::Program program = builder.finish();
  SearchOptions options = testing::quietOptions(program);
  options.config.maxVariants = 3;
  const SearchResult result = superoptimize(program, options);
  ASSERT_FALSE(result.variants.empty());
  bool partial = false;
  for (const VerifiedVariant& v : result.variants) {
    EXPECT_EQ(v.verification.level, "finite-field");
    EXPECT_LE(v.verification.falseAcceptBound, 1e-12);
    for (const graph::KernelOp& kernel : v.schedule.graph.ops) {
      if (!kernel.block) continue;
      std::vector<graph::Dims> inputs;
      for (graph::TensorId t : kernel.inputs) inputs.push_back(v.schedule.graph.tensors[t].shape);
      partial = partial || graph::hasPartialTiles(graph::blockTileSplits(*kernel.block, inputs));
    }
  }
  EXPECT_TRUE(partial) << "no reported variant has a partial tile";
}

// Whether a reported variant is one block graph computing the norm once (whole, rms_norm, or
// as its statistics applied after the matmuls, sqrt) and `matmuls` matmuls; every variant
// verified in the field within the bound.
bool fusesNormAndMatmuls(const SearchResult& result, int matmuls) {
  bool fused = false;
  for (const VerifiedVariant& v : result.variants) {
    EXPECT_EQ(v.verification.level, "finite-field");
    EXPECT_LE(v.verification.falseAcceptBound, 1e-12);
    const graph::KernelGraph& g = v.schedule.graph;
    if (g.ops.size() != 1 || !g.ops[0].block) continue;
    int products = 0, norms = 0;
    for (const graph::BlockOp& op : g.ops[0].block->ops) {
      products += op.kind == graph::OpKind::Matmul ? 1 : 0;
      norms += op.kind == graph::OpKind::Sqrt || op.kind == graph::OpKind::RmsNorm ? 1 : 0;
    }
    fused = fused || (products == matmuls && norms == 1);
  }
  return fused;
}

TEST(RmsNormMatmulSearch, FindsAFusedSchedule) {
  const graph::Program program = *builtinProgram("rmsnorm_matmul");
  SearchOptions options = testing::quietOptions(program);
  // The best of each solution shape is verified in turn with the best other tilings: the
  // one-kernel fusion comes after the cheaper two- to four-kernel shapes (the norm's kernels
  // may cut rows finer than a matmul tile), sixth of the shapes by estimate, so eleventh.
  options.config.maxVariants = 11;
  const SearchResult result = superoptimize(program, options);
  ASSERT_FALSE(result.variants.empty());
  // sqrt is a random function in the field: the fused schedule is checked by fingerprints.
  EXPECT_TRUE(fusesNormAndMatmuls(result, 1));
}

TEST(RmsNormMatmulSearch, FusesANormAndAGatedMlpIntoOneKernel) {
  // More kernels than the limit when each matmul is a kernel of its own: the whole program
  // is searched (its form with the norm's statistics applied after both matmuls fits one
  // block graph) beside the pieces, and both are ranked together.
  const graph::Program program = graph::parseProgramText(
      "program norm_mlp\n"
      "input X f16 [4, 128]\n"
      "input W1 f16 [128, 256]\n"
      "input W3 f16 [128, 256]\n"
      "N = rms_norm(X, dim=1)\n"
      "Y = mul(silu(matmul(N, W1)), matmul(N, W3))\n"
      "output Y\n",
      "norm_mlp.mg");
  SearchOptions options = testing::quietOptions(program);
  options.config.maxVariants = 4;
  const SearchResult result = superoptimize(program, options);
  ASSERT_FALSE(result.variants.empty());
  EXPECT_TRUE(fusesNormAndMatmuls(result, 2))
      << "no variant computes the norm and both matmuls in one kernel";
}

}  // namespace
}  // namespace mugraph::search
