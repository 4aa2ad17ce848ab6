// A norm feeding several matmuls (a Llama layer's RMSNorm and its Q/K/V projections, written
// out in primitive ops as the FX front end writes it): on sm_90 every matmul can run as the
// warpgroup GEMM sketch, each as a kernel of its own after the norm's, and the best estimate
// stays near what the matmuls cost alone. Projections as wide as the hidden size (multi-head
// attention's), so the warpgroup GEMM is what the cost model ranks first for each.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "graph/program_text.h"
#include "plan/kernel_plan.h"
#include "search/cost_model.h"
#include "search/superoptimize.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

// A Llama norm and its Q/K/V projections over `rows` rows, hidden 1024, Q 1024 wide and K, V
// `kvWidth` wide.
graph::Program normAndProjections(int rows, int kvWidth, const std::string& name) {
  const std::string kv = std::to_string(kvWidth);
  return graph::parseProgramText(
      "program " + name + "\n" +
          "input x0 f16 [" + std::to_string(rows) + ", 1024]\n" +
          "input x1 f16 [1, 1024]\n"
          "input wq f16 [1024, 1024] layout=transposed\n"
          "input wk f16 [1024, " + kv + "] layout=transposed\n" +
          "input wv f16 [1024, " + kv + "] layout=transposed\n" +
          "t0 = square(x0)\n"
          "t1 = reduce_sum(t0, dim=1)\n"
          "t2 = scale(t1, c=0.0009765625)\n"
          "t3 = add_scalar(t2, c=1e-06)\n"
          "t4 = sqrt(t3)\n"
          "t5 = div(x0, t4)\n"
          "t6 = mul(x1, t5)\n"
          "q = matmul(t6, wq)\n"
          "k = matmul(t6, wk)\n"
          "v = matmul(t6, wv)\n"
          "output q\n"
          "output k\n"
          "output v\n",
      name + ".mg");
}

// Hidden 1024, 512 rows (the matmuls, not launches, dominate); Q, K and V 1024 wide.
graph::Program normAndProjections() { return normAndProjections(512, 1024, "norm_qkv"); }

// One projection alone.
graph::Program standaloneMatmul() {
  return graph::parseProgramText(
      "program mm\n"
      "input a f16 [512, 1024]\n"
      "input b f16 [1024, 1024] layout=transposed\n"
      "c = matmul(a, b)\n"
      "output c\n",
      "mm.mg");
}

double bestCost(const graph::Program& program, int maxVariants) {
  SearchOptions options = testing::quietOptions(program);
  options.config.maxVariants = maxVariants;
  const SearchResult result = superoptimize(program, options);
  EXPECT_FALSE(result.variants.empty()) << program.name;
  return result.variants.empty() ? 0 : result.variants.front().cost.microseconds;
}

// The names of the matmul outputs `g` computes in a warpgroup GEMM sketch's kernel.
std::set<std::string> sketchedOutputs(const graph::KernelGraph& g) {
  std::set<std::string> names;
  for (const graph::KernelOp& kernel : g.ops) {
    if (kernel.name.find("_wgmma_gemm_") == std::string::npos) continue;
    for (graph::TensorId t : kernel.outputs) names.insert(g.tensors[t].name);
  }
  return names;
}

TEST(NormMatmulsSearch, EveryMatmulGetsTheWarpgroupGemmSketchOnSm90) {
  const graph::Program program = normAndProjections();
  const SearchConfig config = defaultConfig(classifyProgram(program));
  ASSERT_TRUE(config.target->warpgroupMma);
  // Generic tilings on the warpgroup path tie with the sketches in the cost model, so the
  // question is asked of the candidates: one computes every matmul in a sketch's kernel (the
  // norm in a block graph of its own before them).
  bool allSketched = false;
  for (const Candidate& candidate : testing::wholeSpace(program, config).best) {
    const std::set<std::string> sketched = sketchedOutputs(candidate.schedule.graph);
    allSketched = allSketched || sketched == std::set<std::string>{"q", "k", "v"};
  }
  EXPECT_TRUE(allSketched) << "no candidate computes q, k and v in wgmma_gemm sketch kernels";
}

TEST(NormMatmulsSearch, TheBestCostsAboutWhatItsMatmulsCostAlone) {
  const graph::Program program = normAndProjections();
  SearchOptions options = testing::quietOptions(program);
  options.config.maxVariants = 1;
  // The program as written (the norm's kernel, then the projections'): the form with the norm
  // recomputed per projection is the decode tests' below, and searching it too would double
  // this test's time for a form that does not win at 512 rows.
  options.config.recomputePrologues = false;
  const SearchResult result = superoptimize(program, options);
  ASSERT_EQ(result.variants.size(), 1u);
  const VerifiedVariant& best = result.variants.front();
  EXPECT_EQ(best.verification.level, "finite-field");
  EXPECT_LE(best.verification.falseAcceptBound, 1e-12);
  // Every matmul is a kernel of its own on the warpgroup GEMM path.
  const graph::KernelGraph& g = best.schedule.graph;
  int warpgroupGemms = 0;
  double gemms = 0;  // the estimate of those kernels
  for (size_t k = 0; k < g.ops.size(); ++k) {
    const plan::KernelPlan planned =
        plan::planKernel(g, static_cast<int>(k), *options.config.target);
    if (!planned.as<plan::WarpgroupMmaPlan>()) continue;
    ++warpgroupGemms;
    gemms += estimateKernelMicroseconds(g, static_cast<int>(k), *options.config.target);
  }
  EXPECT_EQ(warpgroupGemms, 3);
  // The norm costs a kernel of its own (a schedule's estimate is the sum of its kernels');
  // the matmuls cost what they cost alone.
  const double alone = 3 * bestCost(standaloneMatmul(), 1);
  EXPECT_LE(gemms, 1.1 * alone) << "the matmuls alone: " << alone << " us";
  EXPECT_LT(gemms, best.cost.microseconds);
}

// At decode (one row), the same norm and projections: the norm is worth computing in each
// projection's kernel (program_rewrites.h, recomputedPrologues) rather than in a kernel of
// its own whose result the projections read back.
graph::Program decodeNormAndProjections() {
  return normAndProjections(1, 128, "norm_qkv_decode");
}

TEST(NormMatmulsSearch, AtDecodeEachProjectionComputesTheNormItReads) {
  const graph::Program program = decodeNormAndProjections();
  SearchOptions options = testing::quietOptions(program);
  options.config.maxVariants = 1;
  const SearchResult result = superoptimize(program, options);
  ASSERT_EQ(result.variants.size(), 1u);
  const VerifiedVariant& best = result.variants.front();
  EXPECT_EQ(best.schedule.program, program);
  EXPECT_EQ(best.verification.level, "finite-field");
  EXPECT_LE(best.verification.falseAcceptBound, 1e-12);
  // Three kernels, each writing one projection: no kernel for the norm alone.
  const graph::KernelGraph& g = best.schedule.graph;
  ASSERT_EQ(g.ops.size(), 3u);
  std::set<std::string> written;
  for (const graph::KernelOp& kernel : g.ops) {
    ASSERT_EQ(kernel.outputs.size(), 1u);
    written.insert(g.tensors[kernel.outputs[0]].name);
  }
  EXPECT_EQ(written, (std::set<std::string>{"q", "k", "v"}));
  // Estimated cheaper than the best schedule of the program as written.
  SearchOptions asWritten = options;
  asWritten.config.recomputePrologues = false;
  const SearchResult once = superoptimize(program, asWritten);
  ASSERT_FALSE(once.variants.empty());
  EXPECT_EQ(once.variants.front().schedule.graph.ops.size(), 4u);
  EXPECT_LT(best.cost.microseconds, once.variants.front().cost.microseconds);
}

}  // namespace
}  // namespace mugraph::search
