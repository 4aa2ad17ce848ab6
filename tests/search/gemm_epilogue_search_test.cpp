// A matmul followed by element-wise ops (a bias, an activation, a residual, a gate) is one
// kernel on the sm_90 warpgroup GEMM path: the warpgroup GEMM sketch takes the ops after the
// matmul as its epilogue, which runs on the accumulators in registers and reads the bias and
// the residual once per result tile (graph::Phase::Invariant). The fused kernel is verified
// like any candidate, and the plan refuses epilogues it cannot run in registers.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "graph/program_text.h"
#include "plan/kernel_plan.h"
#include "search/superoptimize.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

// An output projection and its residual: y = r + x·W, large enough that the cost model
// prefers the warpgroup GEMM to the general path's tiles.
graph::Program projectionAndResidual() {
  return graph::parseProgramText(
      "program o_proj_residual\n"
      "input x f16 [512, 1024]\n"
      "input w f16 [1024, 2048] layout=transposed\n"
      "input r f16 [512, 2048]\n"
      "p = matmul(x, w)\n"
      "y = add(r, p)\n"
      "output y\n",
      "o_proj_residual.mg");
}

// A gated MLP's gate, as Llama's FX graph writes it: silu(x·G)·u, silu as t·sigmoid(t), with
// a bias on the product.
graph::Program gate() {
  return graph::parseProgramText(
      "program gate\n"
      "input x f16 [128, 256]\n"
      "input g f16 [256, 128] layout=transposed\n"
      "input b f16 [1, 128]\n"
      "input u f16 [128, 128]\n"
      "t0 = matmul(x, g)\n"
      "t1 = add(t0, b)\n"
      "t2 = sigmoid(t1)\n"
      "t3 = mul(t1, t2)\n"
      "y = mul(t3, u)\n"
      "output y\n",
      "gate.mg");
}

// GPT-2's MLP up-projection: a bias and GELU's tanh form (gelu_new), ten element-wise ops
// after the matmul, more than a block graph's maxBlockOps.
graph::Program tanhGelu() {
  return graph::parseProgramText(
      "program fc_gelu\n"
      "input x f16 [256, 256]\n"
      "input w f16 [256, 1024]\n"
      "input b f16 [1, 1024]\n"
      "t0 = matmul(x, w)\n"
      "t1 = add(t0, b)\n"
      "t2 = scale(t1, c=0.5)\n"
      "t3 = square(t1)\n"
      "t4 = mul(t1, t3)\n"
      "t5 = scale(t4, c=0.044715)\n"
      "t6 = add(t1, t5)\n"
      "t7 = scale(t6, c=0.7978845608028654)\n"
      "t8 = tanh(t7)\n"
      "t9 = add_scalar(t8, c=1)\n"
      "y = mul(t2, t9)\n"
      "output y\n",
      "fc_gelu.mg");
}

// Llama's up projection times the gate: the gate [2048, 2816] is read once per result tile by
// the epilogue, after the loop.
graph::Program upTimesGate() {
  return graph::parseProgramText(
      "program up_gate\n"
      "input x f16 [2048, 1024]\n"
      "input g f16 [2048, 2816]\n"
      "input w f16 [1024, 2816] layout=transposed\n"
      "u = matmul(x, w)\n"
      "y = mul(g, u)\n"
      "output y\n",
      "up_gate.mg");
}

// The warpgroup GEMM plan of a planned kernel, or null where it runs on another path.
const plan::WarpgroupMmaPlan* warpgroupGemm(const plan::KernelPlan& planned) {
  return planned.as<plan::WarpgroupMmaPlan>();
}

// The variant the search ranks first for `program`, verified.
VerifiedVariant bestVariant(const graph::Program& program, const SearchOptions& options) {
  SearchOptions one = options;
  one.config.maxVariants = 1;
  const SearchResult result = superoptimize(program, one);
  if (result.variants.size() != 1) throw std::runtime_error("no verified variant");
  return result.variants.front();
}

TEST(GemmEpilogueSearch, AResidualAddedToAProjectionIsTheGemmsEpilogue) {
  const graph::Program program = projectionAndResidual();
  const SearchOptions options = testing::quietOptions(program);
  ASSERT_TRUE(options.config.target->warpgroupMma);
  const VerifiedVariant best = bestVariant(program, options);
  EXPECT_EQ(best.verification.level, "finite-field");
  EXPECT_LE(best.verification.falseAcceptBound, 1e-12);
  const graph::KernelGraph& g = best.schedule.graph;
  ASSERT_EQ(g.ops.size(), 1u) << "the residual in a kernel of its own";
  const plan::KernelPlan planned = plan::planKernel(g, 0, *options.config.target);
  const plan::WarpgroupMmaPlan* wg = warpgroupGemm(planned);
  ASSERT_TRUE(wg) << "the fused kernel is not on the warpgroup GEMM path";
  ASSERT_EQ(wg->epilogueOps.size(), 1u);
  EXPECT_EQ(g.ops[0].block->ops[wg->epilogueOps[0]].kind, graph::OpKind::Add);
  ASSERT_EQ(wg->epilogueInputs.size(), 1u);
  // The residual's tile is read once per result tile, after the loop.
  const int residual = wg->epilogueInputs[0];
  EXPECT_EQ(g.ops[0].block->ops[residual].fmap, graph::kReplicated);
  EXPECT_EQ(planned.phases[g.ops[0].block->ops[residual].output], graph::Phase::Invariant);
  ASSERT_TRUE(planned.inputs[residual]);
  EXPECT_FALSE(planned.inputs[residual]->perIteration);
}

TEST(GemmEpilogueSearch, TheSketchProposesTheGateAsOneKernelWithItsWholeEpilogue) {
  const graph::Program program = gate();
  SearchConfig config = defaultConfig(classifyProgram(program));
  // Every candidate is kept: at this size the cost model ranks the general path's tiles
  // first, and the question is what the sketch proposes.
  config.candidatePool = 1 << 20;
  config.maxKernels = 1;  // the question is about one-kernel candidates only
  bool fused = false;
  for (const Candidate& candidate : testing::wholeSpace(program, config).best) {
    const graph::KernelGraph& g = candidate.schedule.graph;
    if (g.ops.size() != 1 || g.ops[0].name.find("_wgmma_gemm_") == std::string::npos) continue;
    const plan::KernelPlan planned = plan::planKernel(g, 0, *config.target);
    const plan::WarpgroupMmaPlan* wg = warpgroupGemm(planned);
    ASSERT_TRUE(wg) << g.ops[0].name;
    // add, sigmoid, mul, mul; the bias broadcast along the rows, the up projection whole.
    EXPECT_EQ(wg->epilogueOps.size(), 4u);
    EXPECT_EQ(wg->epilogueInputs.size(), 2u);
    fused = true;
  }
  EXPECT_TRUE(fused) << "no candidate runs the gate as one warpgroup GEMM sketch kernel";
}

// The epilogue is offered to the sketch past maxBlockOps (sketches.h: lastGemmEpilogueOp):
// the whole program is one warpgroup GEMM kernel, ranked first.
TEST(GemmEpilogueSearch, AnEpilogueLongerThanABlockGraphsOpsIsStillOneKernel) {
  const graph::Program program = tanhGelu();
  SearchOptions options = testing::quietOptions(program);
  options.config.maxBlockOps = 8;
  ASSERT_GT(static_cast<int>(program.ops.size()), options.config.maxBlockOps);
  const VerifiedVariant best = bestVariant(program, options);
  EXPECT_EQ(best.verification.level, "finite-field");
  EXPECT_LE(best.verification.falseAcceptBound, 1e-12);
  const graph::KernelGraph& g = best.schedule.graph;
  ASSERT_EQ(g.ops.size(), 1u) << "the epilogue in kernels of its own";
  const plan::KernelPlan planned = plan::planKernel(g, 0, *options.config.target);
  const plan::WarpgroupMmaPlan* wg = warpgroupGemm(planned);
  ASSERT_TRUE(wg) << g.ops[0].name;
  EXPECT_EQ(wg->epilogueOps.size(), 10u);
  EXPECT_EQ(wg->epilogueInputs.size(), 1u);  // the bias
}

// The cost model charges a loop-invariant input once, as the plan reads it: charged once per
// iteration (16 here), the gate made the one kernel cost more than the GEMM and a product
// kernel after it.
TEST(GemmEpilogueSearch, AGateTheEpilogueReadsOnceIsChargedOnce) {
  const graph::Program program = upTimesGate();
  const SearchOptions options = testing::quietOptions(program);
  const VerifiedVariant best = bestVariant(program, options);
  const graph::KernelGraph& g = best.schedule.graph;
  ASSERT_EQ(g.ops.size(), 1u) << "the product in a kernel of its own";
  const plan::KernelPlan planned = plan::planKernel(g, 0, *options.config.target);
  const plan::WarpgroupMmaPlan* wg = warpgroupGemm(planned);
  ASSERT_TRUE(wg) << g.ops[0].name;
  ASSERT_EQ(wg->epilogueInputs.size(), 1u);
  EXPECT_FALSE(planned.inputs[wg->epilogueInputs[0]]->perIteration);
}

TEST(GemmEpilogueSearch, ThePlanRefusesAnEpilogueWhoseResultIsNotWhatIsStored) {
  const graph::Program program = projectionAndResidual();
  const SearchOptions options = testing::quietOptions(program);
  graph::KernelGraph g = bestVariant(program, options).schedule.graph;
  ASSERT_EQ(g.ops.size(), 1u);
  graph::BlockGraph& block = *g.ops[0].block;
  const plan::KernelPlan fused = plan::planKernel(g, 0, *options.config.target);
  ASSERT_TRUE(warpgroupGemm(fused));
  // The output now stores the bare accumulator: the add is left dangling, which no register
  // epilogue can hold (nothing would read its result).
  graph::BlockOp& output = block.ops[fused.as<plan::WarpgroupMmaPlan>()->outputOp];
  output.inputs[0] = block.ops[fused.as<plan::WarpgroupMmaPlan>()->accumulatorOp].output;
  EXPECT_FALSE(warpgroupGemm(plan::planKernel(g, 0, *options.config.target)));
}

}  // namespace
}  // namespace mugraph::search
