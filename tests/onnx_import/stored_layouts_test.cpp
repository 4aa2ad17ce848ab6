// Values the framework stores other than row-major (graph JSON's value "layout"): SDPA's
// result [b, h, s, d] laid out [b, s, h, d]. A subgraph writing such a value stores it so, and
// one reading it through the heads swap and the merge of the heads reads that memory as a
// plain row-major [b, s, h·d]: neither side copies it.
#include <gtest/gtest.h>

#include <random>

#include "graph/error.h"
#include "graph/types.h"
#include "onnx_import/graph_json.h"
#include "onnx_import/import_model.h"
#include "verify/interpreter.h"

namespace mugraph::onnx_import {
namespace {

using nlohmann::json;

constexpr int64_t kLayoutHeads = 2, kLayoutRows = 8, kLayoutDim = 16, kLayoutOut = 24;

struct LayoutGraphJson {
  json values = json::array(), constants = json::array(), nodes = json::array();

  void value(const std::string& name, std::vector<int64_t> shape, const char* layout = nullptr,
             const char* type = "float16") {
    json v = {{"name", name}, {"type", type}, {"shape", shape}};
    if (layout) v["layout"] = layout;
    values.push_back(v);
  }
  void constant(const std::string& name, std::vector<int64_t> numbers) {
    value(name, {static_cast<int64_t>(numbers.size())}, nullptr, "int64");
    constants.push_back(
        {{"name", name}, {"values", std::vector<double>(numbers.begin(), numbers.end())}});
  }
  void node(const std::string& op, std::vector<std::string> in, const std::string& out,
            json attributes = json::object()) {
    json n = {{"name", out}, {"op", op}, {"inputs", in}, {"outputs", {out}}};
    if (!attributes.empty()) n["attributes"] = attributes;
    nodes.push_back(n);
  }
  json graph(std::vector<std::string> inputs, std::vector<std::string> outputs) const {
    return {
        {"format", "mugraph.graph"}, {"version", 1},           {"name", "g"},    {"opset", 21},
        {"values", values},          {"constants", constants}, {"nodes", nodes}, {"inputs", inputs},
        {"outputs", outputs}};
  }
};

// out = softmax(q·kᵀ)·v per head, from the values q, k and v of [1, h, s, d] already
// described; `outLayout` says how the framework stores out.
void softmaxAttention(LayoutGraphJson& g, const char* outLayout) {
  g.value("kt", {1, kLayoutHeads, kLayoutDim, kLayoutRows});
  g.node("Transpose", {"k"}, "kt", {{"perm", {0, 1, 3, 2}}});
  g.value("qk", {1, kLayoutHeads, kLayoutRows, kLayoutRows});
  g.node("MatMul", {"q", "kt"}, "qk");
  g.value("p", {1, kLayoutHeads, kLayoutRows, kLayoutRows});
  g.node("Softmax", {"qk"}, "p", {{"axis", -1}});
  g.value("out", {1, kLayoutHeads, kLayoutRows, kLayoutDim}, outLayout);
  g.node("MatMul", {"p", "v"}, "out");
}

// softmax(q·kᵀ)·v per head, its result stored [b, s, h, d].
TEST(StoredLayouts, AnAttentionResultStoredHeadsSwappedIsWrittenSo) {
  LayoutGraphJson g;
  for (const char* x : {"q", "k", "v"}) g.value(x, {1, kLayoutHeads, kLayoutRows, kLayoutDim});
  softmaxAttention(g, "heads_transposed");
  const ImportedModel m =
      partitionModel(modelFromGraphJson(g.graph({"q", "k", "v"}, {"out"}), "attention.json"));
  ASSERT_EQ(m.subgraphs.size(), 1u);
  const Subgraph& s = m.subgraphs[0];
  ASSERT_EQ(s.outputs.size(), 1u);
  EXPECT_EQ(s.outputs[0].layout, graph::Layout::HeadsTransposed);
  const graph::Program& p = s.program;
  EXPECT_EQ(p.tensors[p.outputs[0]].layout, graph::Layout::HeadsTransposed);
  for (const BoundInput& in : s.inputs) EXPECT_NE(in.layout, graph::Layout::HeadsTransposed);
}

// out ([b, h, s, d], stored [b, s, h, d] where `stored`) swapped back, made contiguous where
// `clone` (an Identity, as PyTorch's clone is translated) and merged to [b, s, h·d].
LayoutGraphJson mergedHeads(bool stored, bool clone) {
  LayoutGraphJson g;
  g.value("out", {1, kLayoutHeads, kLayoutRows, kLayoutDim}, stored ? "heads_transposed" : nullptr);
  g.value("w", {kLayoutHeads * kLayoutDim, kLayoutOut});
  g.value("t", {1, kLayoutRows, kLayoutHeads, kLayoutDim});
  g.node("Transpose", {"out"}, "t", {{"perm", {0, 2, 1, 3}}});
  std::string merging = "t";
  if (clone) {
    g.value("c", {1, kLayoutRows, kLayoutHeads, kLayoutDim});
    g.node("Identity", {"t"}, "c");
    merging = "c";
  }
  g.constant("merged.shape", {1, kLayoutRows, kLayoutHeads * kLayoutDim});
  g.value("merged", {1, kLayoutRows, kLayoutHeads * kLayoutDim});
  g.node("Reshape", {merging, "merged.shape"}, "merged");
  g.value("y", {1, kLayoutRows, kLayoutOut});
  g.node("MatMul", {"merged", "w"}, "y");
  return g;
}

// Without a stored layout the contiguous copy is PyTorch's, and the projection reads it.
TEST(StoredLayouts, ACopyOfHeadsSwappedFromADenseResultIsReadAsTheCopy) {
  const ImportedModel m = partitionModel(
      modelFromGraphJson(mergedHeads(false, true).graph({"out", "w"}, {"y"}), "p.json"));
  ASSERT_EQ(m.subgraphs.size(), 1u);
  bool readsCopy = false;
  for (const BoundInput& in : m.subgraphs[0].inputs) readsCopy = readsCopy || in.buffer == "c";
  EXPECT_TRUE(readsCopy);
}

// out ([b, h, s, d] stored [b, s, h, d]) swapped back (and copied contiguous, or not) and
// merged to [b, s, h·d], then a projection: the subgraph reads out's memory as a row-major
// [b, s, h·d] and computes the projection of it.
TEST(StoredLayouts, TheHeadsSwappedBackAndMergedAreReadAsTheBufferIs) {
  for (const bool clone : {false, true}) {
    SCOPED_TRACE(clone ? "through a contiguous copy" : "views only");
    LayoutGraphJson g = mergedHeads(true, clone);
    const ImportedModel m =
        partitionModel(modelFromGraphJson(g.graph({"out", "w"}, {"y"}), "projection.json"));
    ASSERT_EQ(m.subgraphs.size(), 1u) << (m.unsupported.empty() ? "" : m.unsupported[0].reason);
    const Subgraph& s = m.subgraphs[0];
    const graph::Program& p = s.program;
    std::mt19937_64 rng(5);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> stored(kLayoutRows * kLayoutHeads * kLayoutDim),
        w(kLayoutHeads * kLayoutDim * kLayoutOut);
    for (double& x : stored) x = normal(rng);
    for (double& x : w) x = normal(rng);
    verify::TensorMap<double> inputs;
    for (const BoundInput& in : s.inputs) {
      const graph::TensorDesc& t = p.tensors[*p.findTensor(in.irName)];
      if (in.buffer == "out") {
        EXPECT_EQ(in.layout, graph::Layout::RowMajor);  // the memory as it is: [s, h·d]
        EXPECT_EQ(graph::elementCount(t.shape), kLayoutRows * kLayoutHeads * kLayoutDim);
        inputs[t.name] = {t.shape, stored};
      } else {
        inputs[t.name] = {t.shape, w};
      }
    }
    ASSERT_EQ(inputs.size(), 2u);
    const std::vector<double> y = verify::evaluate(p, inputs).at(p.tensors[p.outputs[0]].name).data;
    ASSERT_EQ(y.size(), static_cast<size_t>(kLayoutRows * kLayoutOut));
    for (int64_t r = 0; r < kLayoutRows; ++r) {
      for (int64_t c = 0; c < kLayoutOut; ++c) {
        double expected = 0;  // the memory at row r is head h's d values, head after head
        for (int64_t k = 0; k < kLayoutHeads * kLayoutDim; ++k) {
          expected += stored[r * kLayoutHeads * kLayoutDim + k] * w[k * kLayoutOut + c];
        }
        EXPECT_NEAR(y[r * kLayoutOut + c], expected, 1e-9);
      }
    }
  }
}

// GQA with the query heads folded into the rows (repeated_heads.h): Q [kv, rep·s, d] mixes
// heads and positions in its rows, which no layout of the folded shape lays out as
// [s, h, d]. Q's buffer and the result, stored [s, h, d] by the framework, are read and
// written row-major (the binding hands Q over in its logical order, and the result is copied
// to the framework's strides), not through their stored layout.
TEST(StoredLayouts, FoldedQueryHeadsAreReadAndWrittenRowMajor) {
  constexpr int64_t kv = 2, rep = 2, h = kv * rep;
  LayoutGraphJson g;
  g.value("q", {1, h, kLayoutRows, kLayoutDim}, "heads_transposed");
  for (const std::string x : {"K", "V"}) {
    g.value(x, {1, kv, kLayoutRows, kLayoutDim});
    g.constant(x + "u.shape", {1, kv, 1, kLayoutRows, kLayoutDim});
    g.value(x + "u", {1, kv, 1, kLayoutRows, kLayoutDim});
    g.node("Reshape", {x, x + "u.shape"}, x + "u");
    g.constant(x + "e.shape", {1, kv, rep, kLayoutRows, kLayoutDim});
    g.value(x + "e", {1, kv, rep, kLayoutRows, kLayoutDim});
    g.node("Expand", {x + "u", x + "e.shape"}, x + "e");
    g.constant(x + "r.shape", {1, h, kLayoutRows, kLayoutDim});
    g.value(x + "r", {1, h, kLayoutRows, kLayoutDim});
    g.node("Reshape", {x + "e", x + "r.shape"}, x + "r");
  }
  g.value("kt", {1, h, kLayoutDim, kLayoutRows});
  g.node("Transpose", {"Kr"}, "kt", {{"perm", {0, 1, 3, 2}}});
  g.value("qk", {1, h, kLayoutRows, kLayoutRows});
  g.node("MatMul", {"q", "kt"}, "qk");
  g.value("p", {1, h, kLayoutRows, kLayoutRows});
  g.node("Softmax", {"qk"}, "p", {{"axis", -1}});
  g.value("out", {1, h, kLayoutRows, kLayoutDim}, "heads_transposed");
  g.node("MatMul", {"p", "Vr"}, "out");
  const ImportedModel m =
      partitionModel(modelFromGraphJson(g.graph({"q", "K", "V"}, {"out"}), "gqa.json"));
  ASSERT_EQ(m.subgraphs.size(), 1u);
  const Subgraph& s = m.subgraphs[0];
  ASSERT_FALSE(s.headFold.empty()) << "the query heads fold";
  const graph::Program& p = s.program;
  EXPECT_EQ(p.tensors[p.outputs[0]].layout, graph::Layout::RowMajor);
  EXPECT_EQ(s.outputs[0].layout, graph::Layout::RowMajor);
  bool sawQ = false;
  for (const BoundInput& in : s.inputs) {
    if (in.buffer != "q") continue;
    sawQ = true;
    EXPECT_EQ(in.layout, graph::Layout::RowMajor);
    EXPECT_EQ(in.bufferLayout, graph::Layout::RowMajor);
  }
  EXPECT_TRUE(sawQ);
}

// Attention whose V is a projection's output [b, s, h·d] split into heads and swapped,
// [b, h, s, d]. Where the framework stores that output densely, the program reads its memory
// through the views (V heads_transposed, no copy). Where it stores it with gaps (a column
// slice of a fused QKV projection, graph JSON "dense": false), the binding copies it anyway,
// so the program reads V itself, row-major: the copy is made in the order the program reads,
// as RoPE's q and k beside it are.
TEST(StoredLayouts, AViewOfABufferWithGapsIsReadAsTheValueItself) {
  for (const bool gaps : {false, true}) {
    SCOPED_TRACE(gaps ? "a buffer with gaps" : "a dense buffer");
    LayoutGraphJson g;
    for (const char* x : {"q", "k"}) g.value(x, {1, kLayoutHeads, kLayoutRows, kLayoutDim});
    g.value("vs", {1, kLayoutRows, kLayoutHeads * kLayoutDim});
    if (gaps) g.values.back()["dense"] = false;
    g.constant("vs.shape", {1, kLayoutRows, kLayoutHeads, kLayoutDim});
    g.value("vh", {1, kLayoutRows, kLayoutHeads, kLayoutDim});
    g.node("Reshape", {"vs", "vs.shape"}, "vh");
    g.value("v", {1, kLayoutHeads, kLayoutRows, kLayoutDim});
    g.node("Transpose", {"vh"}, "v", {{"perm", {0, 2, 1, 3}}});
    softmaxAttention(g, nullptr);
    const ImportedModel m =
        partitionModel(modelFromGraphJson(g.graph({"q", "k", "vs"}, {"out"}), "attention.json"));
    ASSERT_EQ(m.subgraphs.size(), 1u) << (m.unsupported.empty() ? "" : m.unsupported[0].reason);
    bool sawV = false;
    for (const BoundInput& in : m.subgraphs[0].inputs) {
      if (in.buffer != "vs" && in.buffer != "v") continue;
      sawV = true;
      EXPECT_EQ(in.value, "v");
      EXPECT_EQ(in.buffer, gaps ? "v" : "vs");
      EXPECT_EQ(in.layout, gaps ? graph::Layout::RowMajor : graph::Layout::HeadsTransposed);
      EXPECT_EQ(in.bufferLayout, graph::Layout::RowMajor);
    }
    EXPECT_TRUE(sawV);
  }
  LayoutGraphJson bad;
  bad.value("x", {kLayoutRows, kLayoutDim});
  bad.values.back()["dense"] = "no";
  bad.value("y", {kLayoutRows, kLayoutDim});
  bad.node("Exp", {"x"}, "y");
  EXPECT_THROW(modelFromGraphJson(bad.graph({"x"}, {"y"}), "bad.json"), UserError);
}

TEST(StoredLayouts, ALayoutNoValueCanHaveIsRefused) {
  LayoutGraphJson g;
  g.value("x", {kLayoutRows, kLayoutDim}, "heads_transposed");
  g.value("y", {kLayoutRows, kLayoutDim});
  g.node("Exp", {"x"}, "y");
  EXPECT_THROW(modelFromGraphJson(g.graph({"x"}, {"y"}), "bad.json"), UserError);
  LayoutGraphJson t;
  t.value("x", {1, kLayoutHeads, kLayoutRows, kLayoutDim}, "transposed");
  t.value("y", {1, kLayoutHeads, kLayoutRows, kLayoutDim});
  t.node("Exp", {"x"}, "y");
  EXPECT_THROW(modelFromGraphJson(t.graph({"x"}, {"y"}), "bad.json"), UserError);
}

}  // namespace
}  // namespace mugraph::onnx_import
