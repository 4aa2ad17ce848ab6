// Partial tiles (DESIGN.md, "Parts need not divide"): splits that do not divide give a last
// part with fewer elements, and elements past the end do not exist. Hand-checked sums and
// maxima, then GEMM and safe attention schedules of odd sizes against their programs, at the
// finite-field level and in floats, and the rules validation enforces.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/shape_inference.h"
#include "graph/tile_splits.h"
#include "tests/verify/safe_attention.h"
#include "tests/verify/test_support.h"
#include "verify/equivalence.h"
#include "verify/interpreter.h"
#include "verify/random_inputs.h"

namespace mugraph::verify {
namespace {

using graph::BlockGraphBuilder;
using graph::DType;
using graph::GraphBuilder;
using graph::OpKind;
using graph::TensorId;
using testing::dimAttrs;
using testing::freshSeed;
using ::testing::HasSubstr;
using testing::kNone;
using testing::normwiseError;
using testing::seedTrace;

TEST(PartialTiles, SplitArithmeticOfDeclaredAndDefaultTiles) {
  graph::BlockGraph block;
  block.grid = {4, 1, 1};
  block.forloop = 2;
  graph::BlockOp input;
  input.imap = {0, kNone, kNone};
  input.fmap = 0;
  input.tile = {128};
  const graph::DimSplit declared = graph::inputSplit({1000}, "x", block, input)[0];
  EXPECT_EQ(declared.blockTile, 256);
  EXPECT_EQ(declared.tile, 128);
  EXPECT_TRUE(declared.partial());
  EXPECT_EQ(declared.realExtent(3, 0), 128);  // the last part holds 1000 - 768 = 232
  EXPECT_EQ(declared.realExtent(3, 1), 104);
  EXPECT_EQ(declared.lastTile(), 104);
  input.tile.clear();
  const graph::DimSplit byDefault = graph::inputSplit({1030}, "x", block, input)[0];
  EXPECT_EQ(byDefault.blockTile, 258);  // ⌈1030/4⌉
  EXPECT_EQ(byDefault.tile, 129);
  EXPECT_EQ(byDefault.lastTile(), 1030 - 3 * 258 - 129);
  EXPECT_FALSE(graph::inputSplit({1024}, "x", block, input)[0].partial());
}

// X [2, 5] cut along dim 1 into parts of 3 and 2; each block sums its part's rows.
TEST(PartialTiles, SumsOfAPartialLastPartHandChecked) {
  GraphBuilder builder("partial_sum");
  const TensorId x = builder.input("X", DType::F32, {2, 5});
  BlockGraphBuilder block({2, 1, 1}, 128, 1, {builder.desc(x)});
  const TensorId tile = block.input(0, {1, kNone, kNone}, kNone, "x");
  block.output(block.op(OpKind::ReduceSum, {tile}, dimAttrs(1), "s"), {1, kNone, kNone});
  const graph::KernelGraph graph = [&] {
    builder.output(builder.blockGraph("sum", block.block(), {x}, {{"Y", DType::F32}})[0]);
    return builder.finish();
  }();
  const TensorMap<double> inputs{{"X", {{2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}}};
  EXPECT_EQ(evaluate(graph, inputs).at("Y").data, (std::vector<double>{6, 9, 21, 19}));
}

// A running max over iterations of 3, 3 and 1 elements of negative values: a padded zero
// would win, a real element must.
TEST(PartialTiles, MaxOverAPartialLastIterationSeesRealElementsOnly) {
  GraphBuilder builder("partial_max");
  const TensorId x = builder.input("X", DType::F32, {1, 7});
  BlockGraphBuilder block({1, 1, 1}, 128, 3, {builder.desc(x)});
  const TensorId tile = block.input(0, {kNone, kNone, kNone}, 1, "x");
  const TensorId tileMax = block.op(OpKind::ReduceMax, {tile}, dimAttrs(1), "tile_max");
  block.output(block.op(OpKind::AccumMax, {tileMax}, {}, "m"), {kNone, kNone, kNone});
  builder.output(builder.blockGraph("max", block.block(), {x}, {{"Y", DType::F32}})[0]);
  const TensorMap<double> inputs{{"X", {{1, 7}, {-5, -4, -9, -8, -7, -6, -3}}}};
  EXPECT_EQ(evaluate(builder.finish(), inputs).at("Y").data, (std::vector<double>{-3}));
}

graph::Program gemmProgram(int64_t m, int64_t k, int64_t n) {
  GraphBuilder builder("gemm");
  const TensorId a = builder.input("A", DType::F16, {m, k});
  const TensorId b = builder.input("B", DType::F16, {k, n});
  builder.output(builder.op(OpKind::Matmul, {a, b}, {}, "C"));
  return builder.finish();
}

// Tiles of `tile` rows and columns and `kTile` along K, declared, so every dim's last part
// is partial.
graph::KernelGraph partialGemm(const graph::Program& program, int64_t tile, int64_t kTile) {
  GraphBuilder builder = GraphBuilder::withInputsOf(program, "gemm_partial");
  const graph::Dims& a = builder.desc(0).shape;
  const graph::Dims& b = builder.desc(1).shape;
  const auto parts = [](int64_t n, int64_t t) { return (n + t - 1) / t; };
  BlockGraphBuilder block({parts(a[0], tile), parts(b[1], tile), 1}, 128, parts(a[1], kTile),
                          {builder.desc(0), builder.desc(1)});
  const TensorId at = block.input(0, {0, kNone, kNone}, 1, "a", {tile, kTile});
  const TensorId bt = block.input(1, {kNone, 1, kNone}, 0, "b", {kTile, tile});
  const TensorId product = block.op(OpKind::Matmul, {at, bt}, {}, "product");
  block.output(block.op(OpKind::AccumSum, {product}, {}, "c"), {0, 1, kNone});
  builder.output(builder.blockGraph("gemm", block.block(), {0, 1}, {{"C", DType::F16}})[0]);
  return builder.finish();
}

TEST(PartialTiles, GemmOfOddSizesEqualsItsProgram) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const graph::Program program = gemmProgram(37, 29, 45);
  const graph::KernelGraph schedule = partialGemm(program, 16, 8);
  ASSERT_EQ(schedule.ops[0].block->grid, (std::array<int64_t, 3>{3, 3, 1}));
  ASSERT_EQ(schedule.ops[0].block->forloop, 4);
  const TensorMap<double> inputs = randomInputs(program, seed);
  EXPECT_LT(normwiseError(evaluate(schedule, inputs).at("C").data,
                          evaluate(program, inputs).at("C").data),
            1e-12);
  EquivalenceOptions options;
  options.seed = seed;
  const EquivalenceReport report = checkEquivalence(program, schedule, options);
  EXPECT_TRUE(report.equivalent) << report.mismatch;
  EXPECT_EQ(report.level, VerificationLevel::FiniteField);
  EXPECT_LE(report.falseAcceptBound, 1e-12);
}

// A GEMM whose last K tile is dropped (the tile is declared one element short of covering K,
// so the split needs one part more than the loop has) is refused; one whose tiles are right
// but which sums one K tile twice computes something else, and the fingerprints say so.
TEST(PartialTiles, AWrongPartialGemmIsRejected) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const graph::Program program = gemmProgram(37, 29, 45);
  GraphBuilder builder = GraphBuilder::withInputsOf(program, "gemm_wrong");
  BlockGraphBuilder block({3, 3, 1}, 128, 4, {builder.desc(0), builder.desc(1)});
  EXPECT_THROW(block.input(0, {0, kNone, kNone}, 1, "a", {16, 7}), graph::ShapeError);
  const TensorId at = block.input(0, {0, kNone, kNone}, 1, "a", {16, 8});
  const TensorId bt = block.input(1, {kNone, 1, kNone}, 0, "b", {8, 16});
  const TensorId product = block.op(OpKind::Matmul, {at, bt}, {}, "product");
  const TensorId twice = block.op(OpKind::Add, {product, product}, {}, "twice");
  block.output(block.op(OpKind::AccumSum, {twice}, {}, "c"), {0, 1, kNone});
  builder.output(builder.blockGraph("gemm", block.block(), {0, 1}, {{"C", DType::F16}})[0]);
  EquivalenceOptions options;
  options.seed = seed;
  EXPECT_FALSE(checkEquivalence(program, builder.finish(), options).equivalent);
}

TEST(PartialTiles, SafeAttentionOverAPartialSequenceEqualsItsProgram) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const graph::Program program = testing::safeAttentionProgram(2, 4, 8, 37);
  EquivalenceOptions options;
  options.seed = seed;
  for (const graph::KernelGraph& schedule :
       {testing::onlineSoftmaxSchedule(program, 4), testing::splitKvSchedule(program, 3, 2)}) {
    SCOPED_TRACE(schedule.name);
    const EquivalenceReport report = checkEquivalence(program, schedule, options);
    EXPECT_TRUE(report.equivalent) << report.mismatch;
    EXPECT_EQ(report.level, VerificationLevel::FiniteField);
    const TensorMap<double> inputs = testing::attentionInputs(program, 16.0, seed);
    EXPECT_LT(normwiseError(evaluate(schedule, inputs).at("O").data,
                            evaluate(program, inputs).at("O").data),
              1e-12);
  }
}

// 37 keys in 3 splits of 2 iterations of 8: parts of 16, the last holding 5 keys, so its
// block runs one iteration of the two (graph/tile_splits.h, shortened loops).
TEST(PartialTiles, ALastSplitOfFewerIterationsSkipsThemAndStillEqualsItsProgram) {
  graph::BlockGraph block;
  block.grid = {1, 3, 1};
  block.forloop = 2;
  graph::BlockOp input;
  input.imap = {kNone, 0, kNone};
  input.fmap = 0;
  input.tile = {8};
  const graph::DimSplit cut = graph::inputSplit({37}, "k", block, input)[0];
  EXPECT_EQ(cut.blockTile, 16);
  EXPECT_EQ(cut.iterationsIn(0), 2);
  EXPECT_EQ(cut.iterationsIn(2), 1);
  EXPECT_TRUE(cut.hasEmptyIterations());
  EXPECT_EQ(cut.lastTile(), 5);

  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const graph::Program program = testing::safeAttentionProgram(2, 4, 8, 37);
  const graph::KernelGraph schedule =
      testing::splitKvSchedule(program, 3, 2, testing::RescaleMistake::None, 8);
  EquivalenceOptions options;
  options.seed = seed;
  const EquivalenceReport report = checkEquivalence(program, schedule, options);
  EXPECT_TRUE(report.equivalent) << report.mismatch;
  EXPECT_EQ(report.level, VerificationLevel::FiniteField);
  const TensorMap<double> inputs = testing::attentionInputs(program, 16.0, seed);
  EXPECT_LT(normwiseError(evaluate(schedule, inputs).at("O").data,
                          evaluate(program, inputs).at("O").data),
            1e-12);
  // The same with a combine that forgets the rescale is still caught.
  EXPECT_FALSE(checkEquivalence(program,
                                testing::splitKvSchedule(
                                    program, 3, 2, testing::RescaleMistake::UnscaledCombine, 8),
                                options)
                   .equivalent);
}

std::string validationError(const std::function<void(GraphBuilder&)>& build) {
  GraphBuilder builder("rules");
  try {
    build(builder);
    builder.finish();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

TEST(PartialTiles, PartialOperandsMustBeCutAlike) {
  // A's K cut by grid x into parts of 8, B's K by the for-loop into tiles of 8: equal tile
  // shapes, but the partial K elements of a block and iteration differ.
  EXPECT_THAT(validationError([](GraphBuilder& b) {
                const TensorId a = b.input("A", DType::F16, {16, 29});
                const TensorId bm = b.input("B", DType::F16, {29, 16});
                BlockGraphBuilder block({4, 1, 1}, 128, 4, {b.desc(a), b.desc(bm)});
                const TensorId at = block.input(0, {1, kNone, kNone}, kNone, "a");
                const TensorId bt = block.input(1, {kNone, kNone, kNone}, 0, "b");
                const TensorId p = block.op(OpKind::Matmul, {at, bt}, {}, "p");
                block.output(block.op(OpKind::AccumSum, {p}, {}, "c"), {0, kNone, kNone});
                b.output(b.blockGraph("k", block.block(), {a, bm}, {{"C", DType::F16}})[0]);
              }),
              HasSubstr("partial tiles must line up"));
}

TEST(PartialTiles, AnAccumulatorMayNotSumTilesOfAPartialLoopDim) {
  EXPECT_THAT(validationError([](GraphBuilder& b) {
                const TensorId x = b.input("X", DType::F32, {4, 10});
                BlockGraphBuilder block({1, 1, 1}, 128, 3, {b.desc(x)});
                const TensorId t = block.input(0, {kNone, kNone, kNone}, 1, "x");
                block.output(block.op(OpKind::AccumSum, {t}, {}, "acc"), {kNone, kNone, kNone});
                b.output(b.blockGraph("k", block.block(), {x}, {{"Y", DType::F32}})[0]);
              }),
              HasSubstr("partial last iteration"));
}

}  // namespace
}  // namespace mugraph::verify
