// Every predefined op evaluated through the interpreter on a one-op program, against an
// independent evaluation with plain Eigen matrices and arrays on fresh random inputs.
#include <gtest/gtest.h>
#include <Eigen/Dense>

#include <cmath>

#include "tests/verify/test_support.h"
#include "verify/interpreter.h"
#include "verify/random_inputs.h"

namespace mugraph::verify {
namespace {

using graph::Dims;
using graph::OpKind;
using testing::freshSeed;
using testing::kTolerance;
using testing::normwiseError;
using testing::oneOpProgram;
using testing::seedTrace;
using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using MatrixMap = Eigen::Map<RowMatrix>;

struct OneOpRun {
  TensorMap<double> inputs;
  std::vector<double> result;
};

// Evaluates `program` on random inputs; `adjust` may reshape the draw (e.g. positive values).
template <class Adjust>
OneOpRun runOneOp(const graph::Program& program, uint64_t seed, Adjust adjust) {
  OneOpRun run{randomInputs(program, seed), {}};
  for (auto& [name, tensor] : run.inputs) {
    for (double& value : tensor.data) value = adjust(value);
  }
  TensorMap<double> outputs = evaluate(program, run.inputs);
  run.result = outputs.at("out").data;
  return run;
}

OneOpRun runOneOp(const graph::Program& program, uint64_t seed) {
  return runOneOp(program, seed, [](double v) { return v; });
}

std::vector<double> flat(const RowMatrix& m) {
  return {m.data(), m.data() + m.size()};
}

void expectBatchedMatmul(const Dims& aShape, const Dims& bShape) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const OneOpRun run = runOneOp(oneOpProgram(OpKind::Matmul, {aShape, bShape}), seed);
  const size_t rank = aShape.size();
  const int64_t m = aShape[rank - 2], k = aShape[rank - 1], n = bShape[rank - 1];
  const int64_t batches = graph::elementCount(aShape) / (m * k);
  std::vector<double> expected(batches * m * n);
  for (int64_t b = 0; b < batches; ++b) {
    ConstMatrixMap a(run.inputs.at("a").data.data() + b * m * k, m, k);
    ConstMatrixMap bm(run.inputs.at("b").data.data() + b * k * n, k, n);
    MatrixMap(expected.data() + b * m * n, m, n) = a * bm;
  }
  EXPECT_LT(normwiseError(run.result, expected), kTolerance);
}

TEST(PredefinedOps, Matmul2D) {
  expectBatchedMatmul({5, 7}, {7, 3});
}
TEST(PredefinedOps, MatmulBatched3D) {
  expectBatchedMatmul({3, 5, 7}, {3, 7, 4});
}
TEST(PredefinedOps, MatmulBatched4D) {
  expectBatchedMatmul({2, 3, 4, 6}, {2, 3, 6, 5});
}
TEST(PredefinedOps, MatmulLargeEnoughToRunInParallel) {
  expectBatchedMatmul({2, 96, 64}, {2, 64, 80});
}

void expectUnary(OpKind kind, graph::OpAttrs attrs, bool positiveInputs,
                 Eigen::ArrayXd (*reference)(const Eigen::ArrayXd&, double)) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed) + " op " + std::string(graph::opName(kind)));
  const OneOpRun run = runOneOp(oneOpProgram(kind, {{3, 4, 5}}, attrs), seed,
                                [&](double v) { return positiveInputs ? std::abs(v) + 0.25 : v; });
  const std::vector<double>& a = run.inputs.at("a").data;
  const Eigen::ArrayXd expected =
      reference(Eigen::Map<const Eigen::ArrayXd>(a.data(), a.size()), attrs.scale);
  EXPECT_LT(normwiseError(run.result, {expected.data(), expected.data() + expected.size()}),
            kTolerance);
}

TEST(PredefinedOps, Exp) {
  expectUnary(OpKind::Exp, {}, false,
              [](const Eigen::ArrayXd& x, double) { return Eigen::ArrayXd(x.exp()); });
}
TEST(PredefinedOps, Square) {
  expectUnary(OpKind::Square, {}, false,
              [](const Eigen::ArrayXd& x, double) { return Eigen::ArrayXd(x.square()); });
}
TEST(PredefinedOps, Sqrt) {
  expectUnary(OpKind::Sqrt, {}, true,
              [](const Eigen::ArrayXd& x, double) { return Eigen::ArrayXd(x.sqrt()); });
}
TEST(PredefinedOps, Silu) {
  expectUnary(OpKind::Silu, {}, false, [](const Eigen::ArrayXd& x, double) {
    return Eigen::ArrayXd(x * (1.0 + (-x).exp()).inverse());
  });
}
TEST(PredefinedOps, Scale) {
  graph::OpAttrs attrs;
  attrs.scale = -0.37;
  expectUnary(OpKind::Scale, attrs, false,
              [](const Eigen::ArrayXd& x, double c) { return Eigen::ArrayXd(x * c); });
}
TEST(PredefinedOps, Sigmoid) {
  expectUnary(OpKind::Sigmoid, {}, false, [](const Eigen::ArrayXd& x, double) {
    return Eigen::ArrayXd((1.0 + (-x).exp()).inverse());
  });
}
TEST(PredefinedOps, Tanh) {
  expectUnary(OpKind::Tanh, {}, false,
              [](const Eigen::ArrayXd& x, double) { return Eigen::ArrayXd(x.tanh()); });
}
TEST(PredefinedOps, Erf) {
  expectUnary(OpKind::Erf, {}, false, [](const Eigen::ArrayXd& x, double) {
    return Eigen::ArrayXd(x.unaryExpr([](double v) { return std::erf(v); }));
  });
}
TEST(PredefinedOps, Relu) {
  expectUnary(OpKind::Relu, {}, false,
              [](const Eigen::ArrayXd& x, double) { return Eigen::ArrayXd(x.max(0.0)); });
}
TEST(PredefinedOps, AddScalar) {
  graph::OpAttrs attrs;
  attrs.scale = -0.37;
  expectUnary(OpKind::AddScalar, attrs, false,
              [](const Eigen::ArrayXd& x, double c) { return Eigen::ArrayXd(x + c); });
}

// The one-op program of `kind` on the values `x` (shape [x.size()]).
std::vector<double> unaryOn(OpKind kind, graph::OpAttrs attrs, const std::vector<double>& x) {
  const graph::Program program = oneOpProgram(kind, {{static_cast<int64_t>(x.size())}}, attrs);
  TensorMap<double> inputs;
  inputs["a"] = HostTensor<double>{{static_cast<int64_t>(x.size())}, x};
  return evaluate(program, inputs).at("out").data;
}

// Values worked out by hand: sigmoid(ln 3) = 1/(1 + 1/3) = 3/4, and far out in either tail the
// limits 1 and 0 with no NaN (exp(800) overflows to infinity, and 1/inf is 0).
TEST(PredefinedOps, SigmoidGivesHandCheckedValuesAndItsLimits) {
  const std::vector<double> y =
      unaryOn(OpKind::Sigmoid, {}, {0.0, std::log(3.0), -std::log(3.0), 800.0, -800.0});
  ASSERT_EQ(y.size(), 5u);
  EXPECT_DOUBLE_EQ(y[0], 0.5);
  EXPECT_DOUBLE_EQ(y[1], 0.75);
  EXPECT_DOUBLE_EQ(y[2], 0.25);
  EXPECT_EQ(y[3], 1.0);
  EXPECT_EQ(y[4], 0.0);
}

// tanh(atanh(1/2)) = 1/2, erf is odd with erf(0) = 0, and both reach ±1 in the tails.
TEST(PredefinedOps, TanhAndErfGiveHandCheckedValuesAndTheirLimits) {
  const std::vector<double> t = unaryOn(OpKind::Tanh, {}, {0.0, std::atanh(0.5), -40.0, 40.0});
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0], 0.0);
  EXPECT_DOUBLE_EQ(t[1], 0.5);
  EXPECT_EQ(t[2], -1.0);
  EXPECT_EQ(t[3], 1.0);
  const std::vector<double> e = unaryOn(OpKind::Erf, {}, {0.0, 1.0, -1.0, 30.0});
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0], 0.0);
  EXPECT_NEAR(e[1], 0.8427007929497149, 1e-15);
  EXPECT_EQ(e[2], -e[1]);
  EXPECT_EQ(e[3], 1.0);
}

TEST(PredefinedOps, AddScalarAddsItsConstant) {
  graph::OpAttrs attrs;
  attrs.scale = 1e-6;
  const std::vector<double> y = unaryOn(OpKind::AddScalar, attrs, {0.0, 1.0, -1e-6, 2.5});
  EXPECT_EQ(y, (std::vector<double>{1e-6, 1.0 + 1e-6, 0.0, 2.5 + 1e-6}));
}

// Binary ops on rank-2 or rank-3 shapes; Eigen's replicate() does the broadcasting.
void expectBinary(OpKind kind, Dims aShape, Dims bShape) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed) + " op " + std::string(graph::opName(kind)) + " " +
               graph::formatDims(aShape) + " with " + graph::formatDims(bShape));
  const OneOpRun run = runOneOp(oneOpProgram(kind, {aShape, bShape}), seed);
  if (aShape.size() == 2) aShape.insert(aShape.begin(), 1);
  if (bShape.size() == 2) bShape.insert(bShape.begin(), 1);
  const int64_t batches = std::max(aShape[0], bShape[0]);
  const int64_t rows = std::max(aShape[1], bShape[1]);
  const int64_t cols = std::max(aShape[2], bShape[2]);
  std::vector<double> expected(batches * rows * cols);
  for (int64_t batch = 0; batch < batches; ++batch) {
    const auto slice = [&](const std::string& name, const Dims& s) {
      const double* data = run.inputs.at(name).data.data() + (s[0] == 1 ? 0 : batch) * s[1] * s[2];
      return RowMatrix(ConstMatrixMap(data, s[1], s[2]).replicate(rows / s[1], cols / s[2]));
    };
    const Eigen::ArrayXXd a = slice("a", aShape).array();
    const Eigen::ArrayXXd b = slice("b", bShape).array();
    Eigen::ArrayXXd result;
    switch (kind) {
      case OpKind::Add:
        result = a + b;
        break;
      case OpKind::Sub:
        result = a - b;
        break;
      case OpKind::Mul:
        result = a * b;
        break;
      default:
        result = a / b;
        break;
    }
    MatrixMap(expected.data() + batch * rows * cols, rows, cols) = result.matrix();
  }
  EXPECT_LT(normwiseError(run.result, expected), kTolerance);
}

TEST(PredefinedOps, BinaryOpsWithEqualShapes) {
  for (OpKind kind : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div}) {
    expectBinary(kind, {2, 3, 4}, {2, 3, 4});
  }
}

TEST(PredefinedOps, BinaryOpsBroadcastSizeOneDims) {
  const std::vector<std::pair<Dims, Dims>> cases = {
      {{4, 5}, {1, 5}},       {{4, 5}, {4, 1}},       {{4, 1}, {1, 5}},
      {{2, 3, 4}, {2, 1, 4}}, {{1, 3, 4}, {2, 3, 4}}, {{2, 3, 1}, {1, 1, 4}},
  };
  for (OpKind kind : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div}) {
    for (const auto& [a, b] : cases) expectBinary(kind, a, b);
  }
}

// Reductions: the input viewed as [outer, n, inner] matrices n x inner, one per outer index.
struct ReductionCase {
  Dims shape;
  int dim;
  int64_t to = 1;
};

int64_t product(const Dims& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end; ++d) p *= shape[d];
  return p;
}

template <class PerSlab>
void expectReduction(OpKind kind, const ReductionCase& c, PerSlab perSlab) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed) + " op " + std::string(graph::opName(kind)) + " on " +
               graph::formatDims(c.shape) + " dim " + std::to_string(c.dim) + " to " +
               std::to_string(c.to));
  graph::OpAttrs attrs;
  attrs.dim = c.dim;
  attrs.to = c.to;
  const OneOpRun run = runOneOp(oneOpProgram(kind, {c.shape}, attrs), seed);
  const int64_t outer = product(c.shape, 0, c.dim);
  const int64_t n = c.shape[c.dim];
  const int64_t inner = product(c.shape, c.dim + 1, c.shape.size());
  std::vector<double> expected;
  for (int64_t o = 0; o < outer; ++o) {
    const RowMatrix slab = ConstMatrixMap(run.inputs.at("a").data.data() + o * n * inner, n, inner);
    const std::vector<double> part = flat(perSlab(slab, c.to));
    expected.insert(expected.end(), part.begin(), part.end());
  }
  EXPECT_LT(normwiseError(run.result, expected), kTolerance);
}

TEST(PredefinedOps, ReduceSumToOne) {
  for (int dim = 0; dim < 3; ++dim) {
    expectReduction(OpKind::ReduceSum, {{3, 4, 5}, dim},
                    [](const RowMatrix& slab, int64_t) { return RowMatrix(slab.colwise().sum()); });
  }
}

TEST(PredefinedOps, ReduceSumToKSumsTheOuterFactor) {
  const std::vector<ReductionCase> cases = {
      {{3, 12, 5}, 1, 4}, {{2, 3, 12}, 2, 3}, {{6, 2}, 0, 2}, {{2, 8, 3}, 1, 8}};
  for (const ReductionCase& c : cases) {
    expectReduction(OpKind::ReduceSum, c, [](const RowMatrix& slab, int64_t to) {
      RowMatrix sum = RowMatrix::Zero(to, slab.cols());
      for (int64_t g = 0; g < slab.rows() / to; ++g) sum += slab.middleRows(g * to, to);
      return sum;
    });
  }
}

TEST(PredefinedOps, ReduceMax) {
  for (int dim = 0; dim < 3; ++dim) {
    expectReduction(OpKind::ReduceMax, {{3, 4, 5}, dim}, [](const RowMatrix& slab, int64_t) {
      return RowMatrix(slab.colwise().maxCoeff());
    });
  }
}

TEST(PredefinedOps, RmsNorm) {
  for (int dim = 0; dim < 3; ++dim) {
    expectReduction(OpKind::RmsNorm, {{3, 4, 5}, dim}, [](const RowMatrix& slab, int64_t) {
      const Eigen::ArrayXXd x = slab.array();
      const Eigen::RowVectorXd rms =
          (x.square().colwise().sum() / static_cast<double>(x.rows())).sqrt().matrix();
      return RowMatrix((x.rowwise() / rms.array()).matrix());
    });
  }
}

}  // namespace
}  // namespace mugraph::verify
