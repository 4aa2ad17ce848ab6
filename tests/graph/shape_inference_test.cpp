// Shape and dtype inference for every op of the table, and the tile arithmetic of block
// graphs: results that must come out, and errors that must name the op, tensor and dim.
#include "graph/shape_inference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "graph/syntax.h"

namespace mugraph::graph {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

struct Tensor {
  std::string name;
  Dims shape;
  DType dtype = DType::F16;
};

Inferred infer(OpKind kind, const std::vector<Tensor>& tensors, OpAttrs attrs = {}) {
  std::vector<Operand> operands;
  for (const Tensor& t : tensors) operands.push_back(Operand{t.name, t.dtype, t.shape});
  return inferOp(kind, attrs, operands);
}

OpAttrs dimAttrs(int dim, int64_t to = 1) {
  OpAttrs attrs;
  attrs.dim = dim;
  attrs.to = to;
  return attrs;
}

std::string inferError(OpKind kind, const std::vector<Tensor>& tensors, OpAttrs attrs = {}) {
  try {
    infer(kind, tensors, attrs);
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ShapeInference, MatmulContractsLastDimOfAWithSecondLastOfB) {
  EXPECT_EQ(infer(OpKind::Matmul, {{"A", {3, 4}}, {"B", {4, 5}}}).shape, (Dims{3, 5}));
  const Inferred batched = infer(OpKind::Matmul, {{"Q", {2, 8, 256, 64}}, {"K", {2, 8, 64, 4096}}});
  EXPECT_EQ(batched.shape, (Dims{2, 8, 256, 4096}));
  EXPECT_EQ(batched.dtype, DType::F16);
}

TEST(ShapeInference, MatmulErrorsNameOperandsAndDims) {
  EXPECT_THAT(inferError(OpKind::Matmul, {{"A", {3, 4}}, {"B", {5, 6}}}),
              AllOf(HasSubstr("matmul(A, B)"), HasSubstr("contraction dims differ"),
                    HasSubstr("'A' dim 1 is 4"), HasSubstr("'B' dim 0 is 5")));
  EXPECT_THAT(
      inferError(OpKind::Matmul, {{"A", {2, 3, 4}}, {"B", {3, 4, 5}}}),
      AllOf(HasSubstr("batch dim 0 differs"), HasSubstr("'A' has 2"), HasSubstr("'B' has 3")));
  EXPECT_THAT(inferError(OpKind::Matmul, {{"A", {4}}, {"B", {4}}}),
              HasSubstr("equal rank >= 2, got 1 and 1"));
  EXPECT_THAT(inferError(OpKind::Matmul, {{"A", {2, 3, 4}}, {"B", {4, 5}}}),
              HasSubstr("equal rank >= 2, got 3 and 2"));
  EXPECT_THAT(inferError(OpKind::Matmul, {{"A", {3, 4}}, {"B", {4, 5}, DType::F32}}),
              AllOf(HasSubstr("dtype mismatch"), HasSubstr("'A' is f16"), HasSubstr("'B' is f32")));
}

TEST(ShapeInference, UnaryOpsKeepShapeAndDtype) {
  for (OpKind kind : {OpKind::Exp, OpKind::Square, OpKind::Sqrt, OpKind::Silu, OpKind::Sigmoid,
                      OpKind::Tanh, OpKind::Erf, OpKind::Relu, OpKind::Scale, OpKind::AddScalar}) {
    SCOPED_TRACE(std::string(opName(kind)));
    const Inferred result = infer(kind, {{"X", {2, 3, 5}, DType::BF16}});
    EXPECT_EQ(result.shape, (Dims{2, 3, 5}));
    EXPECT_EQ(result.dtype, DType::BF16);
    EXPECT_THAT(inferError(kind, {{"X", {2}}, {"Y", {2}}}),
                AllOf(HasSubstr(std::string(opName(kind)) + "(X, Y)"),
                      HasSubstr("takes 1 operand(s), got 2")));
  }
}

TEST(ShapeInference, ScaleAndAddScalarNeedAFiniteConstant) {
  for (OpKind kind : {OpKind::Scale, OpKind::AddScalar}) {
    SCOPED_TRACE(std::string(opName(kind)));
    OpAttrs attrs;
    attrs.scale = std::numeric_limits<double>::infinity();
    EXPECT_THAT(inferError(kind, {{"X", {4}}}, attrs),
                AllOf(HasSubstr(std::string(opName(kind)) + "(X)"),
                      HasSubstr("c must be a finite number")));
    attrs.scale = std::nan("");
    EXPECT_THAT(inferError(kind, {{"X", {4}}}, attrs), HasSubstr("finite"));
  }
}

TEST(ShapeInference, BinaryOpsBroadcastSizeOneDims) {
  for (OpKind kind : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div}) {
    SCOPED_TRACE(std::string(opName(kind)));
    EXPECT_EQ(infer(kind, {{"A", {4, 5}}, {"B", {4, 5}}}).shape, (Dims{4, 5}));
    EXPECT_EQ(infer(kind, {{"A", {4, 1}}, {"B", {1, 5}}}).shape, (Dims{4, 5}));
    EXPECT_EQ(infer(kind, {{"E", {2, 256, 4096}}, {"S", {2, 256, 1}}}).shape, (Dims{2, 256, 4096}));
    EXPECT_THAT(inferError(kind, {{"A", {4, 5}}, {"B", {4, 3}}}),
                AllOf(HasSubstr(std::string(opName(kind)) + "(A, B)"),
                      HasSubstr("dim 1 does not broadcast"), HasSubstr("'A' has 5"),
                      HasSubstr("'B' has 3")));
    EXPECT_THAT(inferError(kind, {{"A", {4, 5}}, {"B", {5}}}),
                HasSubstr("operands need equal rank, got 2 and 1"));
    EXPECT_THAT(inferError(kind, {{"A", {4}}, {"B", {4}, DType::F32}}),
                HasSubstr("dtype mismatch: 'A' is f16, 'B' is f32"));
  }
}

TEST(ShapeInference, ReductionsShrinkTheirDim) {
  EXPECT_EQ(infer(OpKind::ReduceSum, {{"E", {2, 256, 4096}}}, dimAttrs(2)).shape,
            (Dims{2, 256, 1}));
  EXPECT_EQ(infer(OpKind::ReduceSum, {{"E", {2, 256, 4096}}}, dimAttrs(2, 64)).shape,
            (Dims{2, 256, 64}));
  EXPECT_EQ(infer(OpKind::ReduceMax, {{"E", {8, 6}}}, dimAttrs(0)).shape, (Dims{1, 6}));
  EXPECT_EQ(infer(OpKind::RmsNorm, {{"X", {8, 6}, DType::F32}}, dimAttrs(1)).shape, (Dims{8, 6}));
  EXPECT_EQ(infer(OpKind::RmsNorm, {{"X", {8, 6}, DType::F32}}, dimAttrs(1)).dtype, DType::F32);
}

TEST(ShapeInference, ReductionErrorsNameDimAndTensor) {
  for (OpKind kind : {OpKind::ReduceSum, OpKind::ReduceMax, OpKind::RmsNorm}) {
    SCOPED_TRACE(std::string(opName(kind)));
    EXPECT_THAT(inferError(kind, {{"X", {8, 6}}}, dimAttrs(2)),
                AllOf(HasSubstr(std::string(opName(kind)) + "(X)"),
                      HasSubstr("dim=2 is out of range for rank 2 tensor 'X'")));
    EXPECT_THAT(inferError(kind, {{"X", {8, 6}}}, dimAttrs(-1)), HasSubstr("dim=-1"));
  }
  EXPECT_THAT(inferError(OpKind::ReduceSum, {{"X", {8, 6}}}, dimAttrs(1, 4)),
              HasSubstr("to=4 does not divide dim 1 of 'X' (size 6)"));
  EXPECT_THAT(inferError(OpKind::ReduceSum, {{"X", {8, 6}}}, dimAttrs(1, 0)),
              HasSubstr("to=0 does not divide"));
}

TEST(ShapeInference, AccumulatorsKeepShape) {
  for (OpKind kind : {OpKind::AccumSum, OpKind::AccumMax}) {
    EXPECT_EQ(infer(kind, {{"a", {1, 32, 128}, DType::F32}}).shape, (Dims{1, 32, 128}));
  }
}

TEST(ShapeInference, RanksOutsideOneToFourAreErrors) {
  EXPECT_THAT(inferError(OpKind::Exp, {{"X", {1, 2, 3, 4, 5}}}),
              AllOf(HasSubstr("exp(X)"), HasSubstr("'X' has rank 5 (1 to 4 supported)")));
  EXPECT_THAT(inferError(OpKind::Exp, {{"X", {}}}), HasSubstr("'X' has rank 0"));
}

TEST(ShapeInference, IoAndBlockGraphOpsHaveNoInferredResult) {
  for (OpKind kind : {OpKind::Input, OpKind::Output, OpKind::BlockGraph}) {
    EXPECT_THAT(inferError(kind, {{"X", {4}}}), HasSubstr("has no inferred result"));
  }
}

TEST(ShapeInference, EveryComputeOpOfTheTableIsCovered) {
  // One call per op with shapes it accepts: catches a new op added to the table without a rule.
  for (const OpInfo& info : allOps()) {
    if (info.opClass == OpClass::Io || info.opClass == OpClass::BlockGraph) continue;
    SCOPED_TRACE(std::string(info.name));
    std::vector<Tensor> operands(info.arity, Tensor{"X", {4, 4}});
    EXPECT_NO_THROW(infer(info.kind, operands, dimAttrs(info.hasDim ? 1 : -1)));
  }
}

BlockGraph blockWith(std::array<int64_t, kGridAxes> grid, int64_t forloop) {
  BlockGraph block;
  block.grid = grid;
  block.forloop = forloop;
  return block;
}

BlockOp inputOp(AxisMap imap, int fmap) {
  BlockOp op;
  op.kind = OpKind::Input;
  op.imap = imap;
  op.fmap = fmap;
  return op;
}

BlockOp outputOp(AxisMap omap) {
  BlockOp op;
  op.kind = OpKind::Output;
  op.omap = omap;
  return op;
}

std::string tileError(const Dims& shape, const BlockGraph& block, const BlockOp& op) {
  try {
    if (op.kind == OpKind::Input) {
      inputTileShape(shape, "Q", block, op);
    } else {
      outputDeviceShape(shape, "o", block, op);
    }
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TileShapes, InputSplitsAlongGridAndForloop) {
  const BlockGraph block = blockWith({2, 16, 1}, 4);
  EXPECT_EQ(inputTileShape({2, 256, 64}, "Q", block, inputOp({0, 1, -1}, -1)), (Dims{1, 16, 64}));
  EXPECT_EQ(inputTileShape({2, 64, 4096}, "K", block, inputOp({0, -1, -1}, 2)),
            (Dims{1, 64, 1024}));
  EXPECT_EQ(inputTileShape({2, 64, 4096}, "K", block, inputOp({-1, -1, -1}, -1)),
            (Dims{2, 64, 4096}));
  EXPECT_EQ(inputTileShape({64}, "v", blockWith({1, 1, 1}, 1), inputOp({-1, -1, -1}, -1)),
            (Dims{64}));
}

TEST(TileShapes, InputErrorsNameFieldTensorAndDim) {
  const BlockGraph block = blockWith({2, 3, 1}, 4);
  EXPECT_THAT(tileError({2, 2, 32}, block, inputOp({0, 1, -1}, -1)),
              HasSubstr("grid.y=3 leaves the last part of dim 1 of 'Q' (size 2) empty"));
  EXPECT_THAT(tileError({2, 63, 32}, block, inputOp({0, -1, 0}, -1)),
              HasSubstr("imap.z maps dim 0 of 'Q' but grid.z is 1"));
  EXPECT_THAT(tileError({2, 63, 32}, block, inputOp({3, -1, -1}, -1)),
              HasSubstr("imap.x=3 is not a dim of 'Q' (rank 3)"));
  EXPECT_THAT(tileError({6, 63, 32}, block, inputOp({0, 0, -1}, -1)),
              HasSubstr("imap.y maps dim 0 of 'Q', which another grid axis already splits"));
  EXPECT_THAT(tileError({2, 63, 9}, block, inputOp({0, -1, -1}, 2)),
              HasSubstr("forloop=4 leaves the last iteration over dim 2 of 'Q' (size 9) empty"));
  EXPECT_THAT(tileError({2, 63, 32}, block, inputOp({0, -1, -1}, 5)),
              HasSubstr("fmap=5 is not a dim of 'Q'"));
  EXPECT_THAT(tileError({2, 63, 32}, blockWith({1, 1, 1}, 1), inputOp({-1, -1, -1}, 2)),
              HasSubstr("fmap maps dim 2 of 'Q' but forloop is 1"));
}

TEST(TileShapes, OutputPlacesTilesAlongMappedDims) {
  const BlockGraph block = blockWith({2, 16, 1}, 4);
  EXPECT_EQ(outputDeviceShape({1, 16, 64}, "o", block, outputOp({0, 1, -1})), (Dims{2, 256, 64}));
  EXPECT_EQ(outputDeviceShape({1, 16, 64}, "o", block, outputOp({2, 0, -1})), (Dims{16, 16, 128}));
}

TEST(TileShapes, OutputErrorsNameAxisAndTile) {
  const BlockGraph block = blockWith({2, 16, 1}, 4);
  EXPECT_THAT(tileError({1, 16, 64}, block, outputOp({0, -1, -1})),
              HasSubstr("grid.y=16 has no output dim for 'o' (omap.y is -1"));
  EXPECT_THAT(tileError({1, 16, 64}, block, outputOp({0, 1, 2})),
              HasSubstr("omap.z maps dim 2 of 'o' but grid.z is 1"));
  EXPECT_THAT(tileError({1, 16, 64}, block, outputOp({0, 0, -1})),
              HasSubstr("omap.y maps dim 0 of 'o', which another grid axis already maps"));
  EXPECT_THAT(tileError({1, 16}, block, outputOp({0, 2, -1})),
              HasSubstr("omap.y=2 is not a dim of 'o' (rank 2)"));
}

}  // namespace
}  // namespace mugraph::graph
