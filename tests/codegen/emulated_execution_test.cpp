// Generated kernels compute what the interpreter computes: each kernel.cu is built for the
// CPU emulation of CUDA (tests/codegen/emulation: fibers for threads, ldmatrix/mma/cp.async
// emulated per the PTX ISA, cp.async landing only at its wait), run through the manifest's
// ABI on random inputs, and compared with verify::evaluate in double. This is how the
// emitter is checked end to end on machines without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "codegen_test_support.h"
#include "emulated_kernels.h"
#include "graph/builder.h"
#include "graph/program_text.h"
#include "graph/validate.h"
#include "tests/plan/memory_bound_schedules.h"
#include "tests/plan/row_owned_schedules.h"
#include "tests/verify/causal_attention.h"
#include "tests/verify/safe_attention.h"
#include "tests/verify/test_support.h"

namespace mugraph::codegen::testing {
namespace {

// Emulating the shipped GEMMs takes 15 s and more; the one-op cases run the same code path
// (128x128 tiles on tensor cores, 256 threads, in-place register accumulators) on 256^2.
inline constexpr double kMaxEmulatedMacs = 3e8;

double matmulWork(const graph::Program& program) {
  double macs = 0;
  for (const graph::KernelOp& op : program.ops) {
    if (op.kind != graph::OpKind::Matmul) continue;
    const graph::TensorDesc& a = program.tensors[op.inputs[0]];
    macs += static_cast<double>(graph::elementCount(program.tensors[op.outputs[0]].shape)) *
            static_cast<double>(a.shape.back());
  }
  return macs;
}

class EmulatedExecution : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kCanEmulate) GTEST_SKIP() << "the CUDA emulation switches contexts on x86-64 only";
  }
};

TEST_F(EmulatedExecution, ShippedSchedulesMatchTheInterpreter) {
  int emulated = 0;
  for (const std::string& path : shippedSchedulePaths()) {
    const graph::Schedule schedule = graph::loadSchedule(path);
    if (matmulWork(schedule.program) > kMaxEmulatedMacs) continue;
    // A schedule tuned for the sm_90 warpgroup path (attention over 128-position tiles) may
    // not fit a block on the general path the emulation models: the GPU tests run it.
    try {
      plan::planSchedule(schedule, emulationTarget());
    } catch (const UserError& e) {
      EXPECT_NE(path.find(".warpgroups.json"), std::string::npos) << e.what();
      continue;
    }
    expectMatchesInterpreter(schedule, 11, 0.5);
    ++emulated;
  }
  EXPECT_GE(emulated, 3);
}

// Every run checks that a kernel touches no shared memory past its planned bytes (the
// manifest's dynamic_shared_bytes); here that check is shown to fail when the bytes handed
// to the launch are fewer than the plan's.
TEST_F(EmulatedExecution, AKernelGivenLessSharedMemoryThanPlannedIsCaught) {
  const graph::Schedule schedule = graph::loadSchedule(std::string(MUGRAPH_SOURCE_DIR) +
                                                       "/schedules/gqa_decode_4k.split_kv.json");
  EmittedSource emitted = emitForEmulation(schedule);
  EmulatedKernels kernels(emitted.source, scratchFolder("short_shared"));
  const verify::TensorMap<double> inputs = verify::randomInputs(schedule.program, 14, 0.5);
  EXPECT_NO_THROW(kernels.run(schedule.graph, emitted, inputs));
  ASSERT_GT(emitted.kernels[0].dynamicSharedBytes, 256);
  emitted.kernels[0].dynamicSharedBytes -= 256;
  try {
    kernels.run(schedule.graph, emitted, inputs);
    FAIL() << "expected the shared-memory check to fail";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("past its planned"), std::string::npos) << e.what();
  }
}

TEST_F(EmulatedExecution, EveryDefaultScheduleOfAPredefinedOpMatchesTheInterpreter) {
  expectMatchesInterpreter(allOneOpCasesLowered(), 12, 1.0);
}

TEST_F(EmulatedExecution, LoweredMultiOpProgramsMatchTheInterpreter) {
  for (const char* name : {"gqa_decode_4k.mg"}) {
    expectMatchesInterpreter(
        lowerProgram(graph::loadProgram(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/" + name)),
        13, 0.5);
  }
}

// Block graphs that exercise what the shipped ones do not. The interpreter runs the
// schedule's own graph, so the program only has to share its interface.

// A fused chain in a tensor-core epilogue whose binary op reads a replicated bias tile with
// broadcasting, accumulated in registers and then read by epilogue ops (materialized);
// a fusion group hosted by an accumulator (run as plain ops); accum_max from the first
// iteration; rms_norm after the loop; bf16 throughout.
graph::Schedule fusedEpilogueSchedule() {
  using graph::DType;
  using graph::OpKind;
  graph::OpAttrs rows;
  rows.dim = 1;
  graph::OpAttrs quarter;
  quarter.scale = 0.25;
  graph::GraphBuilder program("fused_epilogue");
  const graph::TensorId x = program.input("X", DType::BF16, {64, 128});
  const graph::TensorId w = program.input("W", DType::BF16, {128, 32});
  program.input("B", DType::BF16, {1, 32});
  program.output(program.op(OpKind::RmsNorm, {program.op(OpKind::Matmul, {x, w})}, rows, "N"));
  program.output(program.op(OpKind::ReduceMax, {x}, rows, "M"));
  graph::Schedule schedule;
  schedule.name = "fused_epilogue.block";
  schedule.program = program.finish();

  const std::vector<graph::TensorDesc> inputs(schedule.program.tensors.begin(),
                                              schedule.program.tensors.begin() + 3);
  graph::BlockGraphBuilder block({2, 1, 1}, 128, 4, inputs);
  const graph::TensorId xt = block.input(0, {0, -1, -1}, 1, "x");
  const graph::TensorId wt = block.input(1, {-1, -1, -1}, 0, "w");
  const graph::TensorId bt = block.input(2, {-1, -1, -1}, -1, "b");
  const graph::TensorId a = block.op(OpKind::Matmul, {xt, wt}, {}, "a");
  const graph::TensorId d = block.op(OpKind::Sub, {a, bt}, {}, "d");
  const graph::TensorId e = block.op(OpKind::Exp, {d}, {}, "e");
  const graph::TensorId eAcc = block.op(OpKind::AccumSum, {e}, {}, "e_acc");
  const graph::TensorId xmAcc =
      block.op(OpKind::AccumMax, {block.op(OpKind::ReduceMax, {xt}, rows, "xm")}, {}, "xm_acc");
  const graph::TensorId s = block.op(OpKind::Scale, {eAcc}, quarter, "s");
  block.output(block.op(OpKind::RmsNorm, {s}, rows, "n"), {0, -1, -1});
  block.output(xmAcc, {0, -1, -1});
  block.fuse(a, {d, e});
  block.fuse(eAcc, {s});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  for (graph::TensorId out : graph.blockGraph("fused", block.block(), {0, 1, 2},
                                              {{"N", DType::BF16}, {"M", DType::BF16}})) {
    graph.output(out);
  }
  schedule.graph = graph.finish();
  graph::validateSchedule(schedule);
  return schedule;
}

// forloop 1: a transposed f32 input through the general (scalar) matmul, and an input tile
// written straight to an output.
graph::Schedule transposedCopySchedule() {
  using graph::DType;
  using graph::OpKind;
  graph::OpAttrs one;
  one.scale = 1.0;
  graph::GraphBuilder program("transposed_copy");
  const graph::TensorId p = program.input("P", DType::F32, {16, 24}, graph::Layout::Transposed);
  const graph::TensorId q = program.input("Q", DType::F32, {24, 8});
  program.output(program.op(OpKind::Matmul, {p, q}, {}, "R"));
  program.output(program.op(OpKind::Scale, {p}, one, "PC"));
  graph::Schedule schedule;
  schedule.name = "transposed_copy.block";
  schedule.program = program.finish();

  const std::vector<graph::TensorDesc> inputs(schedule.program.tensors.begin(),
                                              schedule.program.tensors.begin() + 2);
  graph::BlockGraphBuilder block({2, 1, 1}, 64, 1, inputs);
  const graph::TensorId pt = block.input(0, {0, -1, -1}, -1, "p");
  const graph::TensorId qt = block.input(1, {-1, -1, -1}, -1, "q");
  block.output(block.op(OpKind::Matmul, {pt, qt}, {}, "r"), {0, -1, -1});
  block.output(pt, {0, -1, -1});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  for (graph::TensorId out :
       graph.blockGraph("copy", block.block(), {0, 1}, {{"R", DType::F32}, {"PC", DType::F32}})) {
    graph.output(out);
  }
  schedule.graph = graph.finish();
  graph::validateSchedule(schedule);
  return schedule;
}

// The shipped GEMM schedule's block graph (128x128x64 tiles, 256 threads, f16) on a
// 256x256x128 problem, small enough to emulate in a second.
graph::Schedule smallTiledGemmSchedule() {
  using graph::DType;
  using graph::OpKind;
  graph::GraphBuilder program("gemm_256");
  const graph::TensorId a = program.input("A", DType::F16, {256, 128});
  const graph::TensorId b = program.input("B", DType::F16, {128, 256});
  program.output(program.op(OpKind::Matmul, {a, b}, {}, "C"));
  graph::Schedule schedule;
  schedule.name = "gemm_256.tiled";
  schedule.program = program.finish();
  graph::BlockGraphBuilder block({2, 2, 1}, 256, 2,
                                 {schedule.program.tensors[0], schedule.program.tensors[1]});
  const graph::TensorId at = block.input(0, {0, -1, -1}, 1, "a");
  const graph::TensorId bt = block.input(1, {-1, 1, -1}, 0, "b");
  const graph::TensorId c = block.op(OpKind::Matmul, {at, bt}, {}, "c");
  block.output(block.op(OpKind::AccumSum, {c}, {}, "c_acc"), {0, 1, -1});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  graph.output(graph.blockGraph("gemm_tiled", block.block(), {0, 1}, {{"C", DType::F16}})[0]);
  schedule.graph = graph.finish();
  graph::validateSchedule(schedule);
  return schedule;
}

TEST_F(EmulatedExecution, TheShippedTiledGemmBlockGraphMatchesTheInterpreter) {
  expectMatchesInterpreter(smallTiledGemmSchedule(), 16, 1.0);
}

TEST_F(EmulatedExecution, FusedTensorCoreEpilogueAccumMaxAndRmsNormMatchTheInterpreter) {
  expectMatchesInterpreter(fusedEpilogueSchedule(), 14, 0.5);
}

// RMSNorm over rows of 4096 (longer than the row-owned path takes) on the general path, one,
// two and four rows a block of four warps: four warps, two and one share each row
// (OpPlan::warpsPerRow), their partial sums met in shared memory. Inputs at a model's spread.
graph::Schedule wideRmsNorm(int64_t rowsPerBlock) {
  graph::OpAttrs rows;
  rows.dim = 1;
  graph::GraphBuilder program("wide_rms_norm");
  program.output(program.op(graph::OpKind::RmsNorm,
                            {program.input("X", graph::DType::F16, {8, 4096})}, rows, "N"));
  graph::Schedule schedule;
  schedule.name = "wide_rms_norm.block";
  schedule.program = program.finish();
  graph::BlockGraphBuilder block({8 / rowsPerBlock, 1, 1}, 128, 1,
                                 {schedule.program.tensors.front()});
  block.output(block.op(graph::OpKind::RmsNorm, {block.input(0, {0, -1, -1}, -1, "x")}, rows, "n"),
               {0, -1, -1});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  graph.output(graph.blockGraph("norm", block.block(), {0}, {{"N", graph::DType::F16}}).at(0));
  schedule.graph = graph.finish();
  return schedule;
}

TEST_F(EmulatedExecution, RowsSharedByWarpsMatchTheInterpreter) {
  const uint64_t seed = verify::testing::freshSeed();
  SCOPED_TRACE(verify::testing::seedTrace(seed));
  for (int64_t rowsPerBlock : {1, 2, 4}) {
    SCOPED_TRACE(std::to_string(rowsPerBlock) + " rows a block");
    const graph::Schedule schedule = wideRmsNorm(rowsPerBlock);
    const GeneratedCode& code =
        compiledOnce(schedule.name + std::to_string(rowsPerBlock), [&] { return schedule; }, {90});
    const bool shared = code.emitted.source.find("const int part = warp % ") != std::string::npos;
    EXPECT_EQ(shared, rowsPerBlock < 4);
    expectMatchesInterpreter(schedule, verify::normalInputs(schedule.program, seed, 1.0));
  }
}

// RMSNorm and a gated MLP in one block graph, as the search fuses them (the norm's sum of
// squares accumulated across the loop, applied after both matmuls): X [8, 256], W1 and W3
// [256, 512], 8 blocks of 64 columns, K 64 an iteration. The two matmuls only read the loop's
// input tiles into registers, so the loop has no barrier around them; the sum of squares
// squares each term as it reads the loaded tile (OpPlan::prologue), so it needs none either.
graph::Schedule normGatedMlp() {
  using graph::OpKind;
  graph::OpAttrs rows;
  rows.dim = 1;
  graph::GraphBuilder program("norm_mlp");
  const graph::TensorId x = program.input("X", graph::DType::F16, {8, 256});
  const graph::TensorId w1 = program.input("W1", graph::DType::F16, {256, 512});
  const graph::TensorId w3 = program.input("W3", graph::DType::F16, {256, 512});
  const graph::TensorId n = program.op(OpKind::RmsNorm, {x}, rows, "N");
  const graph::TensorId gate = program.op(OpKind::Silu, {program.op(OpKind::Matmul, {n, w1})});
  program.output(program.op(OpKind::Mul, {gate, program.op(OpKind::Matmul, {n, w3})}, {}, "Y"));
  graph::Schedule schedule;
  schedule.name = "norm_mlp.fused";
  schedule.program = program.finish();
  const std::vector<graph::TensorDesc>& t = schedule.program.tensors;
  graph::BlockGraphBuilder block({8, 1, 1}, 128, 4, {t[0], t[1], t[2]});
  const graph::TensorId xt = block.input(0, {-1, -1, -1}, 1, "x");
  const graph::TensorId w1t = block.input(1, {1, -1, -1}, 0, "w1");
  const graph::TensorId w3t = block.input(2, {1, -1, -1}, 0, "w3");
  const graph::TensorId up1 = block.op(OpKind::AccumSum, {block.op(OpKind::Matmul, {xt, w1t})});
  graph::OpAttrs sum;
  sum.dim = 1;
  sum.to = 1;
  const graph::TensorId squares = block.op(OpKind::Square, {xt}, {}, "sq");
  const graph::TensorId total =
      block.op(OpKind::AccumSum, {block.op(OpKind::ReduceSum, {squares}, sum, "sumsq")});
  graph::OpAttrs mean;
  mean.scale = 1.0 / 256;
  const graph::TensorId root =
      block.op(OpKind::Sqrt, {block.op(OpKind::Scale, {total}, mean)}, {}, "rms");
  const graph::TensorId g = block.op(OpKind::Silu, {block.op(OpKind::Div, {up1, root})});
  const graph::TensorId up3 = block.op(OpKind::AccumSum, {block.op(OpKind::Matmul, {xt, w3t})});
  block.output(block.op(OpKind::Mul, {g, block.op(OpKind::Div, {up3, root})}), {1, -1, -1});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  graph.output(graph.blockGraph("mlp", block.block(), {0, 1, 2}, {{"Y", graph::DType::F16}})[0]);
  schedule.graph = graph.finish();
  graph::validateSchedule(schedule);
  return schedule;
}

// The text from `from` to `to` (both first occurrences, `to` after `from`) of `source`.
std::string between(const std::string& source, const std::string& from, const std::string& to) {
  const size_t begin = source.find(from);
  const size_t end = source.find(to, begin == std::string::npos ? 0 : begin);
  if (begin == std::string::npos || end == std::string::npos) return "";
  return source.substr(begin, end - begin);
}

TEST_F(EmulatedExecution, ANormAndAGatedMlpInOneKernelMatchTheInterpreter) {
  const uint64_t seed = verify::testing::freshSeed();
  SCOPED_TRACE(verify::testing::seedTrace(seed));
  const graph::Schedule schedule = normGatedMlp();
  const std::string source = emitForEmulation(schedule).source;
  // In the loop: the multiply, the sum of squares (each term squared as it is read from the
  // loaded tile: the squares are never stored) and the second multiply with no barrier
  // between them, one at the iteration's end.
  const std::string loop = source.substr(source.find("for (int it = 0;"));
  const std::string afterFirst = loop.substr(loop.find("// matmul") + 1);
  const std::string middle = between(afterFirst, "// reduce_sum", "// matmul");
  ASSERT_FALSE(middle.empty());
  EXPECT_EQ(loop.find("// square"), std::string::npos);
  EXPECT_EQ(between(loop, "// matmul", "// reduce_sum").find("__syncthreads"), std::string::npos);
  EXPECT_EQ(middle.find("__syncthreads"), std::string::npos) << middle;
  EXPECT_NE(middle.find(") * ("), std::string::npos) << middle;
  // Each iteration's copies are unrolled per thread.
  EXPECT_NE(loop.find("#pragma unroll\n"), std::string::npos);
  expectMatchesInterpreter(schedule, verify::normalInputs(schedule.program, seed, 1.0));
}

// Row-owned kernels (plan/paths/row_owned_plan.h): a residual, RMSNorm and a row sum over
// rows of 256 and 2048 in 16-byte chunks, one and two rows a warp; RoPE of query and key heads
// (fewer rows, masked) with the rotated halves in one lane, head dims 64 and 128. Inputs at a
// model's spread (std 1).
TEST_F(EmulatedExecution, RowOwnedNormsAndRotationsMatchTheInterpreter) {
  const uint64_t seed = verify::testing::freshSeed();
  SCOPED_TRACE(verify::testing::seedTrace(seed));
  for (const graph::Schedule& schedule :
       {plan::testing::residualRmsNorm(256, 8), plan::testing::residualRmsNorm(2048, 4),
        plan::testing::gqaRope(64), plan::testing::gqaRope(128),
        plan::testing::gqaRope(64, graph::OpKind::RotatePairs),
        plan::testing::gqaRope(128, graph::OpKind::RotatePairs)}) {
    SCOPED_TRACE(schedule.name);
    ASSERT_NE(plan::planKernel(schedule.graph, 0, emulationTarget()).as<plan::RowOwnedPlan>(),
              nullptr);
    expectMatchesInterpreter(schedule, verify::normalInputs(schedule.program, seed, 1.0));
  }
}

// Fewer rows than a tensor-core fragment: the padding rows read the last real row again and
// are never stored.
TEST_F(EmulatedExecution, MatmulsOfFewRowsPaddedOnTensorCoresMatchTheInterpreter) {
  for (int64_t rows : {1, 4, 8}) {
    for (graph::DType dtype : {graph::DType::F16, graph::DType::BF16}) {
      expectMatchesInterpreter(plan::testing::smallRowMatmul(rows, dtype), 17 + rows, 1.0);
    }
  }
}

// A narrow tile whose warps split K (MmaPlan::warpsK): their sums meet in shared memory right
// after the multiply, or, accumulated across the loop in registers, at the store.
TEST_F(EmulatedExecution, WarpsSplittingKMatchTheInterpreter) {
  for (int64_t rows : {1, 16}) {
    for (int64_t forloop : {1, 2}) {
      expectMatchesInterpreter(plan::testing::narrowMatmul(rows, graph::DType::F16, forloop),
                               31 + rows + forloop, 1.0);
    }
  }
  expectMatchesInterpreter(plan::testing::narrowMatmul(4, graph::DType::BF16, 2), 29, 1.0);
}

// Partial tiles (graph/tile_splits.h): a GEMM whose M, N and K all end in a partial tile
// (declared 64 x 64 x 32 tiles of 100 x 90 x 72, so loads zero-fill and stores stop at the end;
// B's rows of 180 bytes move in 4-byte chunks), on tensor cores.
graph::Schedule partialGemmSchedule(graph::DType dtype) {
  using graph::OpKind;
  graph::GraphBuilder program("gemm_partial");
  const graph::TensorId a = program.input("A", dtype, {100, 72});
  const graph::TensorId b = program.input("B", dtype, {72, 90});
  program.output(program.op(OpKind::Matmul, {a, b}, {}, "C"));
  graph::Schedule schedule;
  schedule.name = "gemm_partial.tiled";
  schedule.program = program.finish();
  graph::BlockGraphBuilder block({2, 2, 1}, 128, 3,
                                 {schedule.program.tensors[0], schedule.program.tensors[1]});
  const graph::TensorId at = block.input(0, {0, -1, -1}, 1, "a", {64, 32});
  const graph::TensorId bt = block.input(1, {-1, 1, -1}, 0, "b", {32, 64});
  const graph::TensorId c = block.op(OpKind::Matmul, {at, bt}, {}, "c");
  block.output(block.op(OpKind::AccumSum, {c}, {}, "c_acc"), {0, 1, -1});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  graph.output(graph.blockGraph("gemm_partial", block.block(), {0, 1}, {{"C", dtype}})[0]);
  schedule.graph = graph.finish();
  graph::validateSchedule(schedule);
  return schedule;
}

TEST_F(EmulatedExecution, PartialGemmTilesMatchTheInterpreterAndWriteNothingPastTheEnd) {
  const graph::Schedule schedule = partialGemmSchedule(graph::DType::F16);
  const plan::KernelPlan plan = plan::planKernel(schedule.graph, 0, emulationTarget());
  ASSERT_TRUE(plan.partial);
  ASSERT_TRUE(std::get<plan::GeneralPlan>(plan.path).ops[2].mma.has_value())
      << "the partial GEMM runs on tensor cores";
  expectMatchesInterpreter(schedule, 23, 1.0);
  expectMatchesInterpreter(partialGemmSchedule(graph::DType::BF16), 24, 1.0);
}

// RMSNorm's root with epsilon and a sigmoid, over partial tiles: X [62, 250] in 4 blocks of 16
// rows (the last 14) and 3 iterations of 84 columns (the last 82). add_scalar turns the
// padding's zero into c, so the squares summed across the loop are right only if the padding
// is zeroed again before the sum; epsilon and the sigmoid run after the loop.
graph::Schedule epsilonNormSchedule() {
  using graph::DType;
  using graph::OpKind;
  graph::OpAttrs rows;
  rows.dim = 1;
  graph::OpAttrs shift;
  shift.scale = 0.5;
  graph::OpAttrs mean;
  mean.scale = 1.0 / 250;
  graph::OpAttrs epsilon;
  epsilon.scale = 1e-6;
  graph::GraphBuilder program("epsilon_norm");
  const graph::TensorId x = program.input("X", DType::F16, {62, 250});
  const graph::TensorId sum =
      program.op(OpKind::ReduceSum,
                 {program.op(OpKind::Square, {program.op(OpKind::AddScalar, {x}, shift)})}, rows);
  const graph::TensorId root = program.op(
      OpKind::Sqrt,
      {program.op(OpKind::AddScalar, {program.op(OpKind::Scale, {sum}, mean)}, epsilon)});
  program.output(program.op(OpKind::Sigmoid, {root}, {}, "G"));
  graph::Schedule schedule;
  schedule.name = "epsilon_norm.block";
  schedule.program = program.finish();

  graph::BlockGraphBuilder block({4, 1, 1}, 128, 3, {schedule.program.tensors[0]});
  const graph::TensorId xt = block.input(0, {0, -1, -1}, 1, "x");
  const graph::TensorId a = block.op(OpKind::AddScalar, {xt}, shift, "a");
  const graph::TensorId q = block.op(OpKind::Square, {a}, {}, "q");
  const graph::TensorId partial = block.op(OpKind::ReduceSum, {q}, rows, "partial");
  const graph::TensorId acc = block.op(OpKind::AccumSum, {partial}, {}, "acc");
  const graph::TensorId m = block.op(OpKind::Scale, {acc}, mean, "m");
  const graph::TensorId e = block.op(OpKind::AddScalar, {m}, epsilon, "e");
  const graph::TensorId r = block.op(OpKind::Sqrt, {e}, {}, "r");
  const graph::TensorId g = block.op(OpKind::Sigmoid, {r}, {}, "g");
  block.output(g, {0, -1, -1});
  block.fuse(a, {q});
  block.fuse(acc, {m, e, r, g});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  graph.output(graph.blockGraph("epsilon_norm", block.block(), {0}, {{"G", DType::F16}})[0]);
  schedule.graph = graph.finish();
  graph::validateSchedule(schedule);
  return schedule;
}

TEST_F(EmulatedExecution, EpsilonAndSigmoidOverPartialTilesMatchTheInterpreter) {
  const graph::Schedule schedule = epsilonNormSchedule();
  ASSERT_TRUE(plan::planKernel(schedule.graph, 0, emulationTarget()).partial);
  expectMatchesInterpreter(schedule, 25, 1.0);
}

// Safe attention over 100 keys in iterations of 50 and 34 (the last 32), one pass with online
// softmax and split-KV: the row max and the sums see only the real keys, at logit spread 16.
TEST_F(EmulatedExecution, SafeAttentionOverAPartialSequenceMatchesTheInterpreter) {
  for (const int64_t forloop : {2, 3}) {
    const graph::Program program =
        verify::testing::safeAttentionProgram(2, 16, 32, 100, graph::DType::F16);
    graph::Schedule online{"online_partial", program,
                           verify::testing::onlineSoftmaxSchedule(program, forloop)};
    expectMatchesInterpreter(online, verify::testing::attentionInputs(program, 16.0, 31));
    graph::Schedule split{"split_partial", program,
                          verify::testing::splitKvSchedule(program, 3, forloop)};
    expectMatchesInterpreter(split, verify::testing::attentionInputs(program, 16.0, 32));
  }
  // Declared 16-key tiles, 3 splits of 3 iterations: the last split holds 4 keys and its block
  // runs one iteration (a shortened loop; the copies issued ahead for the others are drained).
  const graph::Program program =
      verify::testing::safeAttentionProgram(2, 16, 32, 100, graph::DType::F16);
  graph::Schedule shortened{
      "split_shortened", program,
      verify::testing::splitKvSchedule(program, 3, 3, verify::testing::RescaleMistake::None, 16)};
  expectMatchesInterpreter(shortened, verify::testing::attentionInputs(program, 16.0, 33));
}

// Softmax rows in one pass (plan::RowPhase): the online softmax's max, exp(x - max) and sum
// share one barrier, a group of lanes per row. 100 keys in 3 iterations of 34 (more keys than a
// warp's lanes: two per lane, the last lane's second past the tile; the last tile partial),
// 16 query rows over passes of 4 rows, with the running max of the loop and in a split; and
// a block holding all 100 keys, whose rows take their own max.
// One block per batch holding all 100 keys (no loop): the row's own max, 4 keys per lane.
graph::KernelGraph wholeRowSoftmaxSchedule(const graph::Program& program) {
  using graph::OpKind;
  constexpr int kNone = graph::kReplicated;
  auto b = graph::GraphBuilder::withInputsOf(program, "whole_rows");
  graph::BlockGraphBuilder block({b.desc(0).shape[0], 1, 1}, 128, 1,
                                 {b.desc(0), b.desc(1), b.desc(2)});
  const auto q = block.input(0, {0, kNone, kNone}, kNone, "q");
  const auto k = block.input(1, {0, kNone, kNone}, kNone, "k");
  const auto v = block.input(2, {0, kNone, kNone}, kNone, "v");
  const auto a = block.op(OpKind::Matmul, {q, k}, {}, "a");
  const auto m = block.op(OpKind::ReduceMax, {a}, verify::testing::reduceAttrs(2), "m");
  const auto e = block.op(OpKind::Exp, {block.op(OpKind::Sub, {a, m}, {}, "shifted")}, {}, "e");
  const auto l = block.op(OpKind::ReduceSum, {e}, verify::testing::reduceAttrs(2), "l");
  const auto ev = block.op(OpKind::Matmul, {e, v}, {}, "ev");
  block.output(block.op(OpKind::Div, {ev, l}, {}, "out"), {0, kNone, kNone});
  b.output(b.blockGraph("whole_rows", block.block(), {0, 1, 2}, {{"O", b.desc(0).dtype}})[0]);
  return b.finish();
}

TEST_F(EmulatedExecution, SoftmaxRowsInOnePassMatchTheInterpreter) {
  const graph::Program program =
      verify::testing::safeAttentionProgram(2, 16, 32, 100, graph::DType::F16);
  for (const graph::Schedule& schedule :
       {graph::Schedule{"whole_rows", program, wholeRowSoftmaxSchedule(program)},
        graph::Schedule{"online_rows", program, verify::testing::onlineSoftmaxSchedule(program, 3)},
        graph::Schedule{"split_rows", program, verify::testing::splitKvSchedule(program, 2, 2)}}) {
    const EmittedSource emitted = emitForEmulation(schedule);
    EXPECT_NE(emitted.source.find("lanes a row"), std::string::npos) << schedule.name;
    // A running max is read by every lane of the row before one overwrites it.
    if (schedule.name != "whole_rows") {
      EXPECT_NE(emitted.source.find("__syncwarp();"), std::string::npos) << schedule.name;
    }
    expectMatchesInterpreter(schedule, verify::testing::attentionInputs(program, 16.0, 35));
  }
}

// Causal attention in one pass, the mask computed per score tile from the block's query part
// and the iteration's keys: 100 keys in 3 iterations (the last partial), query parts of 12 and
// 8 rows, and query heads folded into the rows (two sequences of 10 over 30 keys).
TEST_F(EmulatedExecution, CausalAttentionMasksEachTileAsTheInterpreterDoes) {
  for (const auto& [rows, seq, queries, parts] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{20, 100, 0, 2}, {20, 30, 10, 2}}) {
    const graph::Program program =
        verify::testing::causalAttentionProgram(2, rows, 32, seq, queries, graph::DType::F16);
    graph::Schedule causal{"causal_online", program,
                           verify::testing::causalOnlineSchedule(program, 3, parts, queries)};
    expectMatchesInterpreter(causal, verify::testing::attentionInputs(program, 16.0, 34));
  }
}

TEST_F(EmulatedExecution, TransposedInputsAndDirectInputOutputsMatchTheInterpreter) {
  expectMatchesInterpreter(transposedCopySchedule(), 15, 1.0);
}

// `schedule` with every output of rank 3 or more stored heads_transposed, in its program and
// its graph alike (a schedule stores an output as its program does, graph/validate.h).
graph::Schedule withHeadsTransposedOutputs(graph::Schedule schedule) {
  for (graph::KernelGraph* graph : {&schedule.program, &schedule.graph}) {
    for (graph::TensorId t : graph->outputs) {
      if (graph->tensors[t].shape.size() >= 3) {
        graph->tensors[t].layout = graph::Layout::HeadsTransposed;
      }
    }
  }
  schedule.name += ".heads_out";
  graph::validateSchedule(schedule);
  return schedule;
}

// Outputs [h, s, d] stored as [s, h, d] (so that a reader of the result as [s, h·d] needs no
// copy) on each path that stores one: attention with its rows in one pass, split-KV with its
// combine kernel, RoPE on the row-owned path, and the default lowering of a batched matmul on
// tensor cores (register stores) and of an element-wise op after it. The emulated run reads
// each output where its layout puts each element, so a store that ignored the layout fails.
TEST_F(EmulatedExecution, OutputsStoredHeadsTransposedMatchTheInterpreter) {
  const graph::Program attention =
      verify::testing::safeAttentionProgram(3, 16, 32, 100, graph::DType::F16);
  expectMatchesInterpreter(
      withHeadsTransposedOutputs(
          {"online", attention, verify::testing::onlineSoftmaxSchedule(attention, 3)}),
      verify::testing::attentionInputs(attention, 4.0, 41));
  expectMatchesInterpreter(
      withHeadsTransposedOutputs(
          {"split", attention, verify::testing::splitKvSchedule(attention, 3, 2)}),
      verify::testing::attentionInputs(attention, 4.0, 42));
  expectMatchesInterpreter(withHeadsTransposedOutputs(plan::testing::gqaRope(64)), 43, 1.0);
  const graph::Program bmm = graph::parseProgramText(
      "program bmm\ninput A f16 [4, 64, 32]\ninput B f16 [4, 32, 48]\nC = matmul(A, B)\n"
      "Y = sigmoid(C)\noutput C layout=heads_transposed\noutput Y layout=heads_transposed\n",
      "bmm.mg");
  const graph::Schedule lowered = lowerProgram(bmm);
  for (graph::TensorId t : lowered.graph.outputs) {
    EXPECT_EQ(lowered.graph.tensors[t].layout, graph::Layout::HeadsTransposed);
  }
  expectMatchesInterpreter(lowered, 44, 0.5);
}

}  // namespace
}  // namespace mugraph::codegen::testing
