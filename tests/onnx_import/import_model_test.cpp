// ONNX models exported by PyTorch's own exporters (tools/python/export_onnx_models.py) become
// the programs they compute: each imported program is checked against the formula written
// by hand, in the finite field; the decoder block partitions and names every node it leaves
// out.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "graph/error.h"
#include "graph/program_text.h"
#include "onnx_import/expect_computes.h"
#include "onnx_import/import_model.h"
#include "tests/onnx_import/exported_models.h"
#include "verify/equivalence.h"

namespace mugraph::onnx_import {
namespace {

// The imported program computes `expected` (same input and output names), checked by
// fingerprints at the finite-field level.
std::vector<std::string> bothExporters(const std::string& name) {
  return {exportedModel(name), exportedModel(name + "_legacy")};
}

TEST(ImportModel, LlamaMlpIsOneSubgraphComputingTheGatedMlp) {
  for (const std::string& path : bothExporters("llama_mlp")) {
    const ImportedModel m = importModel(path, {});
    ASSERT_EQ(m.subgraphs.size(), 1u) << path;
    EXPECT_TRUE(m.unsupported.empty()) << path << ": " << m.unsupported.front().node;
    const Subgraph& s = m.subgraphs[0];
    EXPECT_EQ(std::count(s.ops.begin(), s.ops.end(), "MatMul"), 3);
    // The weights are initializers: program inputs, stored [in, out] after export.
    ASSERT_EQ(s.inputs.size(), 4u);
    ASSERT_EQ(s.outputs.size(), 1u);
    std::string names;
    for (const BoundInput& in : s.inputs) names += " " + in.irName;
    const graph::Program& p = s.program;
    // Inputs in the order the program declares them: x, then each weight where first used.
    std::string expected = "program expected\n";
    for (graph::TensorId t : p.inputs) {
      expected +=
          "input " + p.tensors[t].name + " f16 " + graph::formatDims(p.tensors[t].shape) + "\n";
    }
    const std::string in0 = p.tensors[p.inputs[0]].name, w1 = p.tensors[p.inputs[1]].name,
                      w3 = p.tensors[p.inputs[2]].name, w2 = p.tensors[p.inputs[3]].name;
    expected += "G = matmul(" + in0 + ", " + w1 + ")\n";
    expected += "H = mul(mul(G, sigmoid(G)), matmul(" + in0 + ", " + w3 + "))\n";
    expected += p.tensors[p.outputs[0]].name + " = matmul(H, " + w2 + ")\n";
    expected += "output " + p.tensors[p.outputs[0]].name + "\n";
    expectComputes(p, expected);
    EXPECT_EQ(p.tensors[p.inputs[0]].shape, (graph::Dims{16, 128})) << names;
  }
}

TEST(ImportModel, RmsNormIsOneSubgraphWithEpsilonAndWeight) {
  for (const std::string& path : bothExporters("rmsnorm")) {
    const ImportedModel m = importModel(path, {});
    ASSERT_EQ(m.subgraphs.size(), 1u) << path;
    EXPECT_TRUE(m.unsupported.empty()) << path << ": " << m.unsupported.front().reason;
    const graph::Program& p = m.subgraphs[0].program;
    ASSERT_EQ(p.inputs.size(), 2u);
    // The f32 upcast inside is a Cast: the program computes in the model's f16.
    const std::string x = p.tensors[p.inputs[0]].name, w = p.tensors[p.inputs[1]].name;
    EXPECT_EQ(p.tensors[p.inputs[1]].shape, (graph::Dims{1, 128}));  // [128] broadcast
    // eps is the f32 constant nearest 1e-6, as the model stores it.
    const std::string y = p.tensors[p.outputs[0]].name;
    expectComputes(p, "input " + x + " f16 [16, 128]\ninput " + w + " f16 [1, 128]\n" +
                          "M = scale(reduce_sum(square(" + x + "), dim=1), c=0.0078125)\n" + y +
                          " = mul(" + w + ", div(" + x +
                          ", sqrt(add_scalar(M, c=9.999999974752427e-07))))\noutput " + y + "\n");
    // A different epsilon is a different function: the check above can fail.
    const graph::Program wrong = graph::parseProgramText(
        "input " + x + " f16 [16, 128]\ninput " + w + " f16 [1, 128]\n" +
            "M = scale(reduce_sum(square(" + x + "), dim=1), c=0.0078125)\n" + y + " = mul(" + w +
            ", div(" + x + ", sqrt(add_scalar(M, c=1e-05))))\noutput " + y + "\n",
        "wrong");
    EXPECT_FALSE(verify::checkEquivalence(wrong, p, {}).equivalent);
  }
}

TEST(ImportModel, AttentionCoreIsOneSubgraphWithSafeSoftmaxAndTransposedK) {
  for (const std::string& path : bothExporters("attention_core")) {
    const ImportedModel m = importModel(path, {});
    ASSERT_EQ(m.subgraphs.size(), 1u) << path;
    EXPECT_TRUE(m.unsupported.empty()) << path;
    const Subgraph& s = m.subgraphs[0];
    ASSERT_EQ(s.inputs.size(), 3u);
    // k.transpose(-2, -1) is read as a layout view of k's own buffer, not copied.
    EXPECT_TRUE(s.inputs[1].transposed);
    EXPECT_EQ(s.inputs[1].buffer, "k");
    const graph::Program& p = s.program;
    EXPECT_EQ(p.tensors[p.inputs[1]].layout, graph::Layout::Transposed);
    const std::string q = p.tensors[p.inputs[0]].name, k = p.tensors[p.inputs[1]].name,
                      v = p.tensors[p.inputs[2]].name, y = p.tensors[p.outputs[0]].name;
    expectComputes(p, "input " + q + " f16 [8, 128, 64]\ninput " + k +
                          " f16 [8, 64, 128] layout=transposed\ninput " + v +
                          " f16 [8, 128, 64]\nA = scale(matmul(" + q + ", " + k +
                          "), c=0.125)\nE = exp(sub(A, reduce_max(A, dim=2)))\n" + y +
                          " = matmul(div(E, reduce_sum(E, dim=2)), " + v + ")\noutput " + y + "\n");
  }
}

TEST(ImportModel, DecoderBlockPartitionsAndNamesEveryNodeLeftOut) {
  for (const std::string& path : bothExporters("decoder_block")) {
    const ImportedModel m = importModel(path, {});
    std::set<std::string> placed;
    bool attention = false, mlp = false;
    for (const Subgraph& s : m.subgraphs) {
      placed.insert(s.nodes.begin(), s.nodes.end());
      attention = attention || std::count(s.ops.begin(), s.ops.end(), "Softmax");
      mlp = mlp || std::count(s.ops.begin(), s.ops.end(), "Sigmoid");
    }
    EXPECT_TRUE(attention) << path;
    EXPECT_TRUE(mlp) << path;
    std::set<std::string> leftOps;
    for (const LeftOut& left : m.unsupported) {
      EXPECT_FALSE(left.reason.empty()) << left.node;
      EXPECT_FALSE(placed.count(left.node)) << left.node << " is both placed and left out";
      placed.insert(left.node);
      leftOps.insert(left.op);
    }
    // The repeated KV heads' Expand stays out; RoPE's Slice, Neg and Concat are rotate_half.
    EXPECT_TRUE(leftOps.count("Expand")) << path << " leaves no Expand out";
    for (const char* op : {"Slice", "Concat"}) {
      EXPECT_FALSE(leftOps.count(op)) << path << " leaves " << op << " out";
    }
    EXPECT_TRUE(std::any_of(m.subgraphs.begin(), m.subgraphs.end(), [](const Subgraph& s) {
      return graph::programToText(s.program).find("rotate_half(") != std::string::npos;
    })) << path;
    EXPECT_GE(m.subgraphs.size(), 3u);
    // Every node is in a subgraph or listed as left out.
    const size_t nodes = path.find("legacy") == std::string::npos ? 64 : 109;
    EXPECT_EQ(placed.size(), nodes) << path;
  }
}

}  // namespace
}  // namespace mugraph::onnx_import
