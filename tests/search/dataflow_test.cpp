// Index-variable labelling of programs: which variable each dim of each tensor gets for a
// GEMM, attention and rms_norm + matmul (hand-derived, numbered in order of first
// appearance), which variables each op reduces, the matmul and whole flags, broadcasting,
// size-1 dims, the ops that stay predefined, and the label queries the search asks.
#include "search/dataflow.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/program_text.h"

namespace mugraph::search {
namespace {

using Labels = std::vector<DimLabel>;

graph::Program parseTestProgram(const std::string& text) {
  return graph::parseProgramText(text, "dataflow_test.mg");
}

const Labels& labelsOf(const Dataflow& flow, const graph::Program& program,
                       const std::string& tensor) {
  return flow.tensors.at(*program.findTensor(tensor)).dims;
}

std::vector<int64_t> extents(const Dataflow& flow) {
  std::vector<int64_t> out;
  for (const IndexVar& var : flow.vars) out.push_back(var.extent);
  return out;
}

TEST(Dataflow, GemmSharesTheContractedVariableAndReducesIt) {
  const graph::Program program = parseTestProgram(
      "input A f16 [64, 32]\n"
      "input B f16 [32, 16]\n"
      "C = matmul(A, B)\n"
      "output C\n");
  const Dataflow flow = buildDataflow(program);
  // m = 0, k = 1, n = 2.
  EXPECT_EQ(extents(flow), (std::vector<int64_t>{64, 32, 16}));
  EXPECT_EQ(labelsOf(flow, program, "A"), (Labels{{0}, {1}}));
  EXPECT_EQ(labelsOf(flow, program, "B"), (Labels{{1}, {2}}));
  EXPECT_EQ(labelsOf(flow, program, "C"), (Labels{{0}, {2}}));
  ASSERT_EQ(flow.ops.size(), 1u);
  EXPECT_EQ(flow.ops[0].kind, graph::OpKind::Matmul);
  EXPECT_EQ(flow.ops[0].reducedVars, (std::vector<int>{1}));
  EXPECT_TRUE(flow.ops[0].fusable);
  for (const IndexVar& var : flow.vars) {
    EXPECT_TRUE(var.matmulDim);
    EXPECT_FALSE(var.whole);
  }
  EXPECT_EQ(flow.inputs, program.inputs);
  EXPECT_EQ(flow.outputs, program.outputs);
}

TEST(Dataflow, AttentionLabelsEveryTensorThroughBothMatmulsAndTheSoftmax) {
  const graph::Program program = parseTestProgram(
      "input Q f16 [2, 32, 16]\n"
      "input K f16 [2, 16, 256]\n"
      "input V f16 [2, 256, 8]\n"
      "A = matmul(Q, K)\n"
      "E = exp(A)\n"
      "S = reduce_sum(E, dim=2)\n"
      "P = div(E, S)\n"
      "O = matmul(P, V)\n"
      "output O\n");
  const Dataflow flow = buildDataflow(program);
  // batch = 0, query rows = 1, head dim = 2, KV sequence = 3, V's head dim = 4: the two head
  // dims are different variables, the KV sequence is one variable from K through V.
  EXPECT_EQ(extents(flow), (std::vector<int64_t>{2, 32, 16, 256, 8}));
  EXPECT_EQ(labelsOf(flow, program, "Q"), (Labels{{0}, {1}, {2}}));
  EXPECT_EQ(labelsOf(flow, program, "K"), (Labels{{0}, {2}, {3}}));
  EXPECT_EQ(labelsOf(flow, program, "V"), (Labels{{0}, {3}, {4}}));
  EXPECT_EQ(labelsOf(flow, program, "A"), (Labels{{0}, {1}, {3}}));
  EXPECT_EQ(labelsOf(flow, program, "E"), (Labels{{0}, {1}, {3}}));
  EXPECT_EQ(labelsOf(flow, program, "S"), (Labels{{0}, {1}, {}}));
  EXPECT_EQ(labelsOf(flow, program, "P"), (Labels{{0}, {1}, {3}}));
  EXPECT_EQ(labelsOf(flow, program, "O"), (Labels{{0}, {1}, {4}}));

  ASSERT_EQ(flow.ops.size(), 5u);
  const std::vector<std::vector<int>> reduced = {{2}, {}, {3}, {}, {3}};
  for (size_t i = 0; i < flow.ops.size(); ++i) {
    EXPECT_EQ(flow.ops[i].kind, program.ops[i].kind) << "op " << i;
    EXPECT_EQ(flow.ops[i].reducedVars, reduced[i]) << "op " << i;
    EXPECT_TRUE(flow.ops[i].fusable) << "op " << i;
    EXPECT_EQ(flow.ops[i].inputs, program.ops[i].inputs) << "op " << i;
    EXPECT_EQ(flow.ops[i].output, program.ops[i].outputs[0]) << "op " << i;
  }
  // Batch is never a matmul's M, N or K; every other variable is.
  const std::vector<bool> matmulDims = {false, true, true, true, true};
  for (size_t v = 0; v < flow.vars.size(); ++v) {
    EXPECT_EQ(flow.vars[v].matmulDim, matmulDims[v]) << "variable " << v;
  }
}

TEST(Dataflow, RmsNormMarksItsDimWholeAndReducesNothing) {
  const graph::Program program = parseTestProgram(
      "input X f16 [16, 64]\n"
      "input W f16 [64, 48]\n"
      "N = rms_norm(X, dim=1)\n"
      "Y = matmul(N, W)\n"
      "output Y\n");
  const Dataflow flow = buildDataflow(program);
  EXPECT_EQ(extents(flow), (std::vector<int64_t>{16, 64, 48}));
  EXPECT_EQ(labelsOf(flow, program, "N"), (Labels{{0}, {1}}));
  EXPECT_EQ(labelsOf(flow, program, "W"), (Labels{{1}, {2}}));
  EXPECT_EQ(labelsOf(flow, program, "Y"), (Labels{{0}, {2}}));
  EXPECT_FALSE(flow.vars[0].whole);
  EXPECT_TRUE(flow.vars[1].whole);
  EXPECT_FALSE(flow.vars[2].whole);
  ASSERT_EQ(flow.ops.size(), 2u);
  EXPECT_TRUE(flow.ops[0].reducedVars.empty());
  EXPECT_TRUE(flow.ops[0].fusable);
  EXPECT_EQ(flow.ops[1].reducedVars, (std::vector<int>{1}));
}

TEST(Dataflow, SizeOneDimsHaveNoVariableAndBroadcastTakesTheOtherOperandsLabel) {
  const graph::Program program = parseTestProgram(
      "input X f16 [4, 8]\n"
      "input R f16 [1, 8]\n"
      "input C f16 [4, 1]\n"
      "Y = add(R, X)\n"
      "Z = mul(Y, C)\n"
      "output Z\n");
  const Dataflow flow = buildDataflow(program);
  EXPECT_EQ(extents(flow), (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(labelsOf(flow, program, "R"), (Labels{{}, {1}}));
  EXPECT_EQ(labelsOf(flow, program, "C"), (Labels{{0}, {}}));
  EXPECT_EQ(labelsOf(flow, program, "Y"), (Labels{{0}, {1}}));
  EXPECT_EQ(labelsOf(flow, program, "Z"), (Labels{{0}, {1}}));
  for (const FlowOp& op : flow.ops) EXPECT_TRUE(op.reducedVars.empty());
}

TEST(Dataflow, ElementwiseOpsUnifyTheDimsOfSeparateInputs) {
  // X and Y start as four variables; add makes them two.
  const graph::Program program = parseTestProgram(
      "input X f16 [4, 8]\n"
      "input Y f16 [4, 8]\n"
      "Z = add(X, Y)\n"
      "output Z\n");
  const Dataflow flow = buildDataflow(program);
  EXPECT_EQ(extents(flow), (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(labelsOf(flow, program, "Y"), (Labels{{0}, {1}}));
  EXPECT_FALSE(flow.vars[0].matmulDim);
}

TEST(Dataflow, ReduceMaxAndReduceSumEmptyTheReducedDim) {
  const graph::Program program = parseTestProgram(
      "input X f16 [4, 8, 16]\n"
      "M = reduce_max(X, dim=1)\n"
      "S = reduce_sum(X, dim=2)\n"
      "output M\n"
      "output S\n");
  const Dataflow flow = buildDataflow(program);
  EXPECT_EQ(labelsOf(flow, program, "M"), (Labels{{0}, {}, {2}}));
  EXPECT_EQ(labelsOf(flow, program, "S"), (Labels{{0}, {1}, {}}));
  ASSERT_EQ(flow.ops.size(), 2u);
  EXPECT_EQ(flow.ops[0].reducedVars, (std::vector<int>{1}));
  EXPECT_EQ(flow.ops[1].reducedVars, (std::vector<int>{2}));
  EXPECT_TRUE(flow.ops[0].fusable);
  EXPECT_TRUE(flow.ops[1].fusable);
}

TEST(Dataflow, ReduceSumToSeveralPartsStaysPredefinedWithAFreshVariable) {
  const graph::Program program = parseTestProgram(
      "input X f16 [4, 128]\n"
      "P = reduce_sum(X, dim=1, to=8)\n"
      "output P\n");
  const Dataflow flow = buildDataflow(program);
  EXPECT_EQ(extents(flow), (std::vector<int64_t>{4, 128, 8}));
  EXPECT_EQ(labelsOf(flow, program, "P"), (Labels{{0}, {2}}));
  ASSERT_EQ(flow.ops.size(), 1u);
  EXPECT_FALSE(flow.ops[0].fusable);
  EXPECT_TRUE(flow.ops[0].reducedVars.empty());
}

TEST(Dataflow, LabelsDoNotDependOnTensorNames) {
  const Dataflow a = buildDataflow(parseTestProgram(
      "input Q f16 [2, 8, 4]\ninput K f16 [2, 4, 16]\nA = exp(matmul(Q, K))\noutput A\n"));
  const Dataflow b = buildDataflow(parseTestProgram(
      "input X f16 [2, 8, 4]\ninput Y f16 [2, 4, 16]\nZ = exp(matmul(X, Y))\noutput Z\n"));
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t t = 0; t < a.tensors.size(); ++t) EXPECT_EQ(a.tensors[t].dims, b.tensors[t].dims);
  EXPECT_EQ(extents(a), extents(b));
}

TEST(DataflowQueries, DimOfFindsTheOutermostVariableOnlyAndBuriedInTheInnerOnes) {
  // A partial result as the search writes it: dim 0 is [split, seq], dim 1 is [head].
  Dataflow flow;
  flow.tensors.resize(2);
  flow.tensors[0].dims = {{5, 3}, {4}, {}};
  flow.outputs = {1};
  EXPECT_EQ(flow.dimOf(0, 5), 0);
  EXPECT_EQ(flow.dimOf(0, 4), 1);
  EXPECT_EQ(flow.dimOf(0, 3), -1);
  EXPECT_EQ(flow.dimOf(0, 9), -1);
  EXPECT_TRUE(flow.buriedIn(0, 3));
  EXPECT_FALSE(flow.buriedIn(0, 5));
  EXPECT_FALSE(flow.buriedIn(0, 4));
  EXPECT_FALSE(flow.isProgramOutput(0));
  EXPECT_TRUE(flow.isProgramOutput(1));
}

TEST(DataflowQueries, DimOfOnABuiltProgram) {
  const graph::Program program =
      parseTestProgram("input A f16 [64, 32]\ninput B f16 [32, 16]\nC = matmul(A, B)\noutput C\n");
  const Dataflow flow = buildDataflow(program);
  const int c = *program.findTensor("C");
  EXPECT_EQ(flow.dimOf(c, 0), 0);
  EXPECT_EQ(flow.dimOf(c, 2), 1);
  EXPECT_EQ(flow.dimOf(c, 1), -1);  // k was contracted away
  EXPECT_FALSE(flow.buriedIn(c, 1));
  EXPECT_TRUE(flow.isProgramOutput(c));
  EXPECT_FALSE(flow.isProgramOutput(*program.findTensor("A")));
}

}  // namespace
}  // namespace mugraph::search
