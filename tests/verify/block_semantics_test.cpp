// Block-graph semantics, checked on small hand-built block graphs: imap splits and
// replication, fmap iterations with accumulators, ops after the loop, omap placement, and
// whole schedules (GEMM, split-K, attention) against the program they implement.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include "tests/verify/test_support.h"
#include "verify/interpreter.h"
#include "verify/random_inputs.h"

namespace mugraph::verify {
namespace {

using graph::AxisMap;
using graph::BlockGraphBuilder;
using graph::DType;
using graph::GraphBuilder;
using graph::OpKind;
using graph::TensorId;
using testing::dimAttrs;
using testing::freshSeed;
using testing::kNone;
using testing::kTolerance;
using testing::normwiseError;
using testing::seedTrace;

// A kernel graph with one input "X" of `shape` and one block-graph kernel writing "Y".
template <class Body>
graph::KernelGraph singleInputKernel(const graph::Dims& shape, std::array<int64_t, 3> grid,
                                     int64_t forloop, Body body) {
  GraphBuilder builder("test");
  const TensorId x = builder.input("X", DType::F32, shape);
  BlockGraphBuilder block(grid, 128, forloop, {builder.desc(x)});
  body(block);
  builder.output(builder.blockGraph("kernel", block.block(), {x}, {{"Y", DType::F32}})[0]);
  return builder.finish();
}

std::vector<double> evaluateY(const graph::KernelGraph& graph, const std::vector<double>& x) {
  const TensorMap<double> inputs{{"X", {graph.tensors[graph.inputs[0]].shape, x}}};
  return evaluate(graph, inputs).at("Y").data;
}

std::vector<double> randomValues(const graph::Program& program, uint64_t seed) {
  return randomInputs(program, seed).at("X").data;
}

// X [2, 4] split along dim 1 by grid axis `axis`; each block sums its [2, 2] tile's rows.
graph::KernelGraph splitAndSumAlong(int axis) {
  std::array<int64_t, 3> grid{1, 1, 1};
  grid[axis] = 2;
  return singleInputKernel({2, 4}, grid, 1, [axis](BlockGraphBuilder& b) {
    AxisMap map{kNone, kNone, kNone};
    map[axis] = 1;
    const TensorId tile = b.input(0, map, kNone, "x");
    b.output(b.op(OpKind::ReduceSum, {tile}, dimAttrs(1), "s"), map);
  });
}

TEST(BlockSemantics, ImapSplitsAlongEachGridAxisHandChecked) {
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    SCOPED_TRACE(std::string("grid axis ") + graph::gridAxisName(axis));
    EXPECT_EQ(evaluateY(splitAndSumAlong(axis), x), (std::vector<double>{3, 7, 11, 15}));
  }
}

TEST(BlockSemantics, TwoGridAxesSplitTwoDims) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const auto graph = singleInputKernel({4, 6}, {2, 3, 1}, 1, [](BlockGraphBuilder& b) {
    const TensorId tile = b.input(0, {0, 1, kNone}, kNone, "x");  // [2, 2]
    b.output(b.op(OpKind::ReduceSum, {tile}, dimAttrs(1), "s"), {0, 1, kNone});
  });
  const std::vector<double> x = randomValues(graph, seed);
  std::vector<double> expected(4 * 3);
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 3; ++c) expected[r * 3 + c] = x[r * 6 + 2 * c] + x[r * 6 + 2 * c + 1];
  }
  EXPECT_EQ(evaluateY(graph, x), expected);
}

TEST(BlockSemantics, ReplicatedInputIsSeenWholeByEveryBlock) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  GraphBuilder builder("replicated");
  const TensorId a = builder.input("A", DType::F32, {4, 3});
  const TensorId row = builder.input("B", DType::F32, {1, 3});
  BlockGraphBuilder block({2, 1, 1}, 128, 1, {builder.desc(a), builder.desc(row)});
  const TensorId aTile = block.input(0, {0, kNone, kNone}, kNone, "a");      // [2, 3]
  const TensorId bTile = block.input(1, {kNone, kNone, kNone}, kNone, "b");  // [1, 3]
  block.output(block.op(OpKind::Add, {aTile, bTile}, {}, "sum"), {0, kNone, kNone});
  builder.output(builder.blockGraph("k", block.block(), {a, row}, {{"Y", DType::F32}})[0]);
  const graph::KernelGraph graph = builder.finish();
  const TensorMap<double> inputs = randomInputs(graph, seed);
  const std::vector<double> y = evaluate(graph, inputs).at("Y").data;
  const std::vector<double>& av = inputs.at("A").data;
  const std::vector<double>& bv = inputs.at("B").data;
  ASSERT_EQ(y.size(), 12u);
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(y[r * 3 + c], av[r * 3 + c] + bv[c]);
  }
}

TEST(BlockSemantics, AccumSumOverForloopEqualsFullReduction) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const auto graph = singleInputKernel({4, 8}, {1, 1, 1}, 4, [](BlockGraphBuilder& b) {
    const TensorId tile = b.input(0, {kNone, kNone, kNone}, 1, "x");  // [4, 2]
    const TensorId partial = b.op(OpKind::ReduceSum, {tile}, dimAttrs(1), "partial");
    b.output(b.op(OpKind::AccumSum, {partial}, {}, "total"), {kNone, kNone, kNone});
  });
  const std::vector<double> x = randomValues(graph, seed);
  std::vector<double> expected(4, 0.0);
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 8; ++c) expected[r] += x[r * 8 + c];
  }
  EXPECT_LT(normwiseError(evaluateY(graph, x), expected), kTolerance);
}

// Accumulating the fmap tiles themselves sums iteration i's columns i*2 + j: reduce_sum(to=2).
TEST(BlockSemantics, AccumSumOfTilesIsReduceSumToK) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const auto graph = singleInputKernel({3, 8}, {1, 1, 1}, 4, [](BlockGraphBuilder& b) {
    const TensorId tile = b.input(0, {kNone, kNone, kNone}, 1, "x");  // [3, 2]
    b.output(b.op(OpKind::AccumSum, {tile}, {}, "total"), {kNone, kNone, kNone});
  });
  GraphBuilder program("reduce");
  program.output(
      program.op(OpKind::ReduceSum, {program.input("X", DType::F32, {3, 8})}, dimAttrs(1, 2), "Y"));
  const std::vector<double> x = randomValues(graph, seed);
  const std::vector<double> expected = evaluateY(program.finish(), x);
  std::vector<double> byHand(6, 0.0);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 8; ++c) byHand[r * 2 + c % 2] += x[r * 8 + c];
  }
  EXPECT_LT(normwiseError(evaluateY(graph, x), expected), kTolerance);
  EXPECT_LT(normwiseError(evaluateY(graph, x), byHand), kTolerance);
}

// fmap on a dim the grid already splits: block b, iteration i reads columns b*4 + i*2 + j.
TEST(BlockSemantics, FmapSplitsTheGridPartHandChecked) {
  const auto graph = singleInputKernel({2, 8}, {2, 1, 1}, 2, [](BlockGraphBuilder& b) {
    const TensorId tile = b.input(0, {1, kNone, kNone}, 1, "x");  // [2, 2]
    b.output(b.op(OpKind::AccumSum, {tile}, {}, "total"), {1, kNone, kNone});
  });
  std::vector<double> x(16);
  for (int i = 0; i < 16; ++i) x[i] = i + 1;
  EXPECT_EQ(evaluateY(graph, x), (std::vector<double>{4, 6, 12, 14, 20, 22, 28, 30}));
}

TEST(BlockSemantics, AccumMaxHandCheckedStartsFromFirstIteration) {
  const auto graph = singleInputKernel({2, 4}, {1, 1, 1}, 2, [](BlockGraphBuilder& b) {
    const TensorId tile = b.input(0, {kNone, kNone, kNone}, 1, "x");  // [2, 2]
    b.output(b.op(OpKind::AccumMax, {tile}, {}, "m"), {kNone, kNone, kNone});
  });
  EXPECT_EQ(evaluateY(graph, {1, 8, 3, 2, 7, 5, 6, 9}), (std::vector<double>{3, 8, 7, 9}));
  EXPECT_EQ(evaluateY(graph, {-1, -8, -3, -2, -7, -5, -6, -9}),
            (std::vector<double>{-1, -2, -6, -5}));
}

TEST(BlockSemantics, AccumMaxOfRowMaximaEqualsReduceMax) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const auto graph = singleInputKernel({6, 8}, {3, 1, 1}, 4, [](BlockGraphBuilder& b) {
    const TensorId tile = b.input(0, {0, kNone, kNone}, 1, "x");  // [2, 2]
    const TensorId partial = b.op(OpKind::ReduceMax, {tile}, dimAttrs(1), "partial");
    b.output(b.op(OpKind::AccumMax, {partial}, {}, "m"), {0, kNone, kNone});
  });
  const std::vector<double> x = randomValues(graph, seed);
  std::vector<double> expected(6);
  for (int r = 0; r < 6; ++r) expected[r] = *std::max_element(&x[r * 8], &x[r * 8] + 8);
  EXPECT_EQ(evaluateY(graph, x), expected);
}

TEST(BlockSemantics, OmapPlacesTilesHandChecked) {
  const auto graph = singleInputKernel({2, 4}, {2, 1, 1}, 1, [](BlockGraphBuilder& b) {
    const TensorId tile = b.input(0, {1, kNone, kNone}, kNone, "x");  // columns 2b, 2b+1
    b.output(tile, {0, kNone, kNone});                                // rows 2b, 2b+1
  });
  EXPECT_EQ(evaluateY(graph, {1, 2, 3, 4, 5, 6, 7, 8}),
            (std::vector<double>{1, 2, 5, 6, 3, 4, 7, 8}));
}

TEST(BlockSemantics, OmapPlacesTilesAtBlockTimesTile) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const auto graph = singleInputKernel({4, 6}, {2, 3, 1}, 1, [](BlockGraphBuilder& b) {
    const TensorId tile = b.input(0, {0, 1, kNone}, kNone, "x");  // [2, 2]
    b.output(b.op(OpKind::Exp, {tile}, {}, "e"), {1, 0, kNone});  // Y is [6, 4]
  });
  const std::vector<double> x = randomValues(graph, seed);
  std::vector<double> expected(24);
  for (int bx = 0; bx < 2; ++bx) {
    for (int by = 0; by < 3; ++by) {
      for (int r = 0; r < 2; ++r) {
        for (int c = 0; c < 2; ++c) {
          expected[(by * 2 + r) * 4 + bx * 2 + c] = std::exp(x[(bx * 2 + r) * 6 + by * 2 + c]);
        }
      }
    }
  }
  EXPECT_LT(normwiseError(evaluateY(graph, x), expected), kTolerance);
}

// exp after accum_sum sees the whole sum: exp(sum of tiles), not the sum of exp(tile).
TEST(BlockSemantics, OpsAfterTheAccumulatorRunOncePerBlock) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const auto graph = singleInputKernel({3, 8}, {3, 1, 1}, 4, [](BlockGraphBuilder& b) {
    const TensorId tile = b.input(0, {0, kNone, kNone}, 1, "x");  // [1, 2]
    const TensorId total = b.op(OpKind::AccumSum, {tile}, {}, "total");
    b.output(b.op(OpKind::Exp, {total}, {}, "e"), {0, kNone, kNone});
  });
  const std::vector<double> x = randomValues(graph, seed);
  std::vector<double> sums(6, 0.0);
  std::vector<double> sumOfExps(6, 0.0);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 8; ++c) {
      sums[r * 2 + c % 2] += x[r * 8 + c];
      sumOfExps[r * 2 + c % 2] += std::exp(x[r * 8 + c]);
    }
  }
  std::vector<double> expected(6);
  for (int i = 0; i < 6; ++i) expected[i] = std::exp(sums[i]);
  const std::vector<double> y = evaluateY(graph, x);
  EXPECT_LT(normwiseError(y, expected), kTolerance);
  EXPECT_GT(normwiseError(y, sumOfExps), 1e-3);
}

graph::Program matmulProgram(int64_t m, int64_t k, int64_t n) {
  GraphBuilder builder("matmul");
  const TensorId a = builder.input("A", DType::F32, {m, k});
  const TensorId b = builder.input("B", DType::F32, {k, n});
  builder.output(builder.op(OpKind::Matmul, {a, b}, {}, "C"));
  return builder.finish();
}

TEST(BlockSemantics, TinyGemmBlockGraphEqualsProgramMatmul) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const graph::Program program = matmulProgram(8, 12, 6);
  GraphBuilder builder = GraphBuilder::withInputsOf(program, "gemm");
  BlockGraphBuilder block({2, 3, 1}, 128, 3, {builder.desc(0), builder.desc(1)});
  const TensorId a = block.input(0, {0, kNone, kNone}, 1, "a");  // [4, 4]
  const TensorId b = block.input(1, {kNone, 1, kNone}, 0, "b");  // [4, 2]
  const TensorId partial = block.op(OpKind::Matmul, {a, b}, {}, "partial");
  block.output(block.op(OpKind::AccumSum, {partial}, {}, "c"), {0, 1, kNone});
  builder.output(builder.blockGraph("gemm", block.block(), {0, 1}, {{"C", DType::F32}})[0]);
  const TensorMap<double> inputs = randomInputs(program, seed);
  const auto expected = evaluate(program, inputs).at("C").data;
  EXPECT_LT(normwiseError(evaluate(builder.finish(), inputs).at("C").data, expected), kTolerance);
}

// Blocks along x each multiply one K slice and write it side by side; reduce_sum(to=n)
// then adds the slices, which is how a split-K schedule combines partial products.
TEST(BlockSemantics, SplitKPartialsCombineWithReduceSumToK) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const graph::Program program = matmulProgram(8, 12, 6);
  GraphBuilder builder = GraphBuilder::withInputsOf(program, "split_k");
  BlockGraphBuilder block({3, 1, 1}, 128, 1, {builder.desc(0), builder.desc(1)});
  const TensorId a = block.input(0, {1, kNone, kNone}, kNone, "a");  // [8, 4]
  const TensorId b = block.input(1, {0, kNone, kNone}, kNone, "b");  // [4, 6]
  block.output(block.op(OpKind::Matmul, {a, b}, {}, "partial"), {1, kNone, kNone});
  const TensorId partials =
      builder.blockGraph("partials", block.block(), {0, 1}, {{"P", DType::F32}})[0];
  ASSERT_EQ(builder.desc(partials).shape, (graph::Dims{8, 18}));
  builder.output(builder.op(OpKind::ReduceSum, {partials}, dimAttrs(1, 6), "C"));
  const TensorMap<double> inputs = randomInputs(program, seed);
  const auto expected = evaluate(program, inputs).at("C").data;
  EXPECT_LT(normwiseError(evaluate(builder.finish(), inputs).at("C").data, expected), kTolerance);
}

// The GQA-style program O = matmul(div(E, reduce_sum(E)), V) with E = exp(matmul(Q, K)).
graph::Program attentionProgram(int64_t batch, int64_t rows, int64_t dim, int64_t seq) {
  GraphBuilder builder("attention");
  const TensorId q = builder.input("Q", DType::F32, {batch, rows, dim});
  const TensorId k = builder.input("K", DType::F32, {batch, dim, seq});
  const TensorId v = builder.input("V", DType::F32, {batch, seq, dim});
  const TensorId e =
      builder.op(OpKind::Exp, {builder.op(OpKind::Matmul, {q, k}, {}, "A")}, {}, "E");
  const TensorId s = builder.op(OpKind::ReduceSum, {e}, dimAttrs(2), "S");
  builder.output(
      builder.op(OpKind::Matmul, {builder.op(OpKind::Div, {e, s}, {}, "P"), v}, {}, "O"));
  return builder.finish();
}

// Grid x over the batch, y over query rows; the for-loop walks the sequence and accumulates
// both the unnormalized output and the softmax denominator, divided once per block.
graph::KernelGraph attentionSchedule(const graph::Program& program, int64_t rowBlocks,
                                     int64_t forloop) {
  GraphBuilder builder = GraphBuilder::withInputsOf(program, "attention_schedule");
  const int64_t batch = builder.desc(0).shape[0];
  const int rowSplit = rowBlocks > 1 ? 1 : kNone;
  BlockGraphBuilder block({batch, rowBlocks, 1}, 128, forloop,
                          {builder.desc(0), builder.desc(1), builder.desc(2)});
  const TensorId q = block.input(0, {0, rowSplit, kNone}, kNone, "q");
  const TensorId k = block.input(1, {0, kNone, kNone}, 2, "k");
  const TensorId v = block.input(2, {0, kNone, kNone}, 1, "v");
  const TensorId e = block.op(OpKind::Exp, {block.op(OpKind::Matmul, {q, k}, {}, "a")}, {}, "e");
  const TensorId s = block.op(OpKind::ReduceSum, {e}, dimAttrs(2), "s");
  const TensorId ev = block.op(OpKind::Matmul, {e, v}, {}, "ev");
  const TensorId out = block.op(OpKind::Div,
                                {block.op(OpKind::AccumSum, {ev}, {}, "acc_ev"),
                                 block.op(OpKind::AccumSum, {s}, {}, "acc_s")},
                                {}, "o");
  block.output(out, {0, rowSplit, kNone});
  builder.output(builder.blockGraph("attention", block.block(), {0, 1, 2}, {{"O", DType::F32}})[0]);
  return builder.finish();
}

TEST(BlockSemantics, AttentionBlockGraphEqualsProgram) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const graph::Program program = attentionProgram(2, 4, 8, 16);
  const TensorMap<double> inputs = randomInputs(program, seed);
  const auto expected = evaluate(program, inputs).at("O").data;
  for (int64_t rowBlocks : {1, 2}) {
    const auto got = evaluate(attentionSchedule(program, rowBlocks, 4), inputs).at("O").data;
    EXPECT_LT(normwiseError(got, expected), kTolerance) << rowBlocks << " row blocks";
  }
}

TEST(BlockSemantics, ResultsAreBitIdenticalForAnyThreadCount) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const graph::Program program = attentionProgram(2, 64, 32, 512);
  const graph::KernelGraph schedule = attentionSchedule(program, 4, 8);
  const TensorMap<double> inputs = randomInputs(program, seed);
  const auto parallelProgram = evaluate(program, inputs).at("O").data;
  const auto parallelSchedule = evaluate(schedule, inputs).at("O").data;
  tbb::global_control oneThread(tbb::global_control::max_allowed_parallelism, 1);
  EXPECT_EQ(evaluate(program, inputs).at("O").data, parallelProgram);
  EXPECT_EQ(evaluate(schedule, inputs).at("O").data, parallelSchedule);
  EXPECT_LT(normwiseError(parallelSchedule, parallelProgram), kTolerance);
}

}  // namespace
}  // namespace mugraph::verify
