// Causal masks read as structure (onnx_import/causal_masks.h): an Add of a causal mask before
// the softmax becomes causal_mask(scores, queries=q) and the mask is no program input, whether
// the FX front end's CausalMask node makes it (SDPA's is_causal) or a constant holds the
// pattern (transformers' own float mask, as the dynamo exporter folds it into an initializer;
// tiled along the rows for GQA's folded query heads; computed in the graph from positions, which
// is evaluated). Each program is checked against the
// attention written by hand (finite field). A mask that is not causal, or that depends on a
// graph input, stays an added tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "graph/program_text.h"
#include "onnx_import/graph_json.h"
#include "onnx_import/import_model.h"
#include "onnx_import/onnx_graph.h"
#include "onnx_import/partition_json.h"
#include "verify/equivalence.h"

namespace mugraph::onnx_import {
namespace {

constexpr uint16_t kHalfZero = 0x0000, kHalfMinusInf = 0xFC00, kHalfLowest = 0xFBFF;

// A [rows, cols] f16 mask, `masked` where keep(r, c) is false, 0 elsewhere, with leading 1s.
void maskInitializer(OnnxGraph& g, const std::string& name, std::vector<int64_t> dims,
                     uint16_t masked, const std::function<bool(int64_t, int64_t)>& keep) {
  onnx::TensorProto* t = g.initializerFor(name);
  t->set_data_type(onnx::TensorProto_DataType_FLOAT16);
  for (int64_t d : dims) t->add_dims(d);
  const int64_t rows = dims[dims.size() - 2], cols = dims.back();
  std::string raw;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const uint16_t bits = keep(r, c) ? kHalfZero : masked;
      raw.push_back(static_cast<char>(bits & 0xff));
      raw.push_back(static_cast<char>(bits >> 8));
    }
  }
  t->set_raw_data(raw);
}

// softmax(Q·Kᵀ·0.125 + M)·V over `heads` heads of `rows` queries and `keys` keys, d 32.
ImportedModel attention(OnnxGraph& g, const std::string& name, int64_t heads, int64_t rows,
                        int64_t keys, const std::string& mask) {
  g.input("Q", {heads, rows, 32});
  g.input("KT", {heads, 32, keys});
  g.input("V", {heads, keys, 32});
  g.scalar("scale", 0.125f);
  g.output("O", {heads, rows, 32});
  g.node("MatMul", {"Q", "KT"}, "qk");
  g.node("Mul", {"qk", "scale"}, "scores");
  g.node("Add", {"scores", mask}, "masked");
  OnnxGraph::attr(g.node("Softmax", {"masked"}, "p"), "axis", int64_t{-1});
  g.node("MatMul", {"p", "V"}, "O");
  return g.import(name);
}

void expectCausalAttention(const Subgraph& s, int64_t heads, int64_t rows, int64_t keys,
                           int64_t queries) {
  ASSERT_EQ(s.inputs.size(), 3u) << graph::programToText(s.program);
  const std::string shape = std::to_string(heads) + ", ";
  const std::string expected =
      "input Q f16 [" + shape + std::to_string(rows) + ", 32]\ninput KT f16 [" + shape + "32, " +
      std::to_string(keys) + "]\ninput V f16 [" + shape + std::to_string(keys) +
      ", 32]\nA = causal_mask(scale(matmul(Q, KT), c=0.125), queries=" + std::to_string(queries) +
      ")\nE = exp(sub(A, reduce_max(A, dim=2)))\nO = matmul(div(E, reduce_sum(E, dim=2)), V)\n"
      "output O\n";
  const graph::Program reference = graph::parseProgramText(expected, "expected");
  const verify::EquivalenceReport r = verify::checkEquivalence(reference, s.program, {});
  EXPECT_TRUE(r.equivalent) << r.mismatch << "\n" << graph::programToText(s.program);
  EXPECT_EQ(r.level, verify::VerificationLevel::FiniteField) << r.levelReason;
  ASSERT_EQ(s.causalMasks.size(), 1u);
  EXPECT_EQ(s.causalMasks[0].queries, queries);
  const nlohmann::json summary = subgraphJson(s);
  ASSERT_TRUE(summary.contains("causal_masks"));
  EXPECT_EQ(summary["causal_masks"][0]["queries"], queries);
}

TEST(CausalMask, ConstantMaskWithTheDtypesLowestValueIsCausalStructure) {
  OnnxGraph g;  // transformers' mask: finfo.min above the diagonal, broadcast over batch, heads
  maskInitializer(g, "M", {1, 1, 16, 16}, kHalfLowest, [](int64_t r, int64_t c) { return c <= r; });
  const ImportedModel m = attention(g, "causal_constant", 4, 16, 16, "M");
  ASSERT_EQ(m.subgraphs.size(), 1u);
  EXPECT_TRUE(m.unsupported.empty());
  expectCausalAttention(m.subgraphs[0], 4, 16, 16, 16);
  EXPECT_EQ(m.subgraphs[0].causalMasks[0].mask, "M");
}

TEST(CausalMask, BottomRightAlignedMaskOfAQueryBlockAfterAPrefix) {
  OnnxGraph g;  // 8 new queries after 8 cached keys: row r sees keys up to r + 8
  maskInitializer(g, "M", {8, 16}, kHalfMinusInf, [](int64_t r, int64_t c) { return c <= r + 8; });
  const ImportedModel m = attention(g, "causal_prefix", 4, 8, 16, "M");
  ASSERT_EQ(m.subgraphs.size(), 1u);
  expectCausalAttention(m.subgraphs[0], 4, 8, 16, 8);
}

TEST(CausalMask, MaskTiledAlongFoldedQueryRowsGivesQueriesOfOneSequence) {
  OnnxGraph g;  // GQA written folded: 2 KV heads, each with 2 query heads of 8 rows stacked
  maskInitializer(g, "M", {16, 8}, kHalfMinusInf, [](int64_t r, int64_t c) { return c <= r % 8; });
  const ImportedModel m = attention(g, "causal_tiled", 2, 16, 8, "M");
  ASSERT_EQ(m.subgraphs.size(), 1u);
  expectCausalAttention(m.subgraphs[0], 2, 16, 8, 8);
}

void int64Initializer(OnnxGraph& g, const std::string& name, std::vector<int64_t> values) {
  onnx::TensorProto* t = g.initializerFor(name);
  t->set_data_type(onnx::TensorProto_DataType_INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
}

TEST(CausalMask, MaskComputedFromPositionsInTheGraphIsEvaluatedAndCausal) {
  OnnxGraph g;  // keys <= queries from Range and Unsqueeze, where(keep, 0, -inf), [1, 1, S, S]
  g.scalar("zero", 0.0f);
  g.scalar("sixteen", 16.0f);
  g.scalar("one", 1.0f);
  g.scalar("minus_inf", -INFINITY);
  int64Initializer(g, "axis0", {0});
  int64Initializer(g, "axis1", {1});
  int64Initializer(g, "axes01", {0, 1});
  g.node("Range", {"zero", "sixteen", "one"}, "positions");
  g.node("Unsqueeze", {"positions", "axis0"}, "keys");     // [1, S]
  g.node("Unsqueeze", {"positions", "axis1"}, "queries");  // [S, 1]
  g.node("LessOrEqual", {"keys", "queries"}, "keep");
  g.node("Where", {"keep", "zero", "minus_inf"}, "square");
  g.node("Unsqueeze", {"square", "axes01"}, "M");
  const ImportedModel m = attention(g, "causal_computed", 4, 16, 16, "M");
  ASSERT_EQ(m.subgraphs.size(), 1u);
  EXPECT_TRUE(m.unsupported.empty()) << m.unsupported[0].node << ": " << m.unsupported[0].reason;
  expectCausalAttention(m.subgraphs[0], 4, 16, 16, 16);
  const std::vector<std::string>& nodes = m.subgraphs[0].nodes;
  EXPECT_NE(std::find(nodes.begin(), nodes.end(), "Range_positions"), nodes.end());
}

// A [1, 1, rows, cols] boolean initializer, true where keep(r, c), in raw bytes.
void boolInitializer(OnnxGraph& g, const std::string& name, int64_t rows, int64_t cols,
                     const std::function<bool(int64_t, int64_t)>& keep) {
  onnx::TensorProto* t = g.initializerFor(name);
  t->set_data_type(onnx::TensorProto_DataType_BOOL);
  for (int64_t d : {int64_t{1}, int64_t{1}, rows, cols}) t->add_dims(d);
  std::string raw;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) raw.push_back(keep(r, c) ? 1 : 0);
  }
  t->set_raw_data(raw);
}

TEST(CausalMask, MaskOfBooleanInitializersTheExporterLeftUnfoldedIsEvaluatedAndCausal) {
  // The dynamo exporter on a 512-token prompt: transformers' mask as And(And(true, keys <=
  // queries), padding) of boolean initializers [1, 1, S, S], then Where(cond, 0, finfo.min).
  // The comparisons are far larger than a parameter constant, and still read to evaluate it.
  OnnxGraph g;
  onnx::TensorProto* truth = g.initializerFor("new_ones");
  truth->set_data_type(onnx::TensorProto_DataType_BOOL);
  truth->set_raw_data(std::string(1, 1));
  boolInitializer(g, "le", 16, 16, [](int64_t r, int64_t c) { return c <= r; });
  boolInitializer(g, "eq", 16, 16, [](int64_t, int64_t) { return true; });
  g.scalar("zero", 0.0f);
  g.scalar("lowest", -3.4028234663852886e38f);
  g.node("And", {"new_ones", "le"}, "and0");
  g.node("And", {"and0", "eq"}, "keep");
  g.node("Where", {"keep", "zero", "lowest"}, "M");
  const ImportedModel m = attention(g, "causal_bool_initializers", 4, 16, 16, "M");
  ASSERT_EQ(m.subgraphs.size(), 1u);
  EXPECT_TRUE(m.unsupported.empty()) << m.unsupported[0].node << ": " << m.unsupported[0].reason;
  expectCausalAttention(m.subgraphs[0], 4, 16, 16, 16);
}

TEST(CausalMask, AComputedMaskTwoAttentionsShareIsListedAsMadeForThem) {
  // Two layers' attention read one mask computed from boolean initializers, an op the framework
  // runs between them: each is causal_mask, and the node making the mask, in neither subgraph,
  // says why it is left out.
  OnnxGraph g;
  boolInitializer(g, "le", 16, 16, [](int64_t r, int64_t c) { return c <= r; });
  g.scalar("zero", 0.0f);
  g.scalar("lowest", -3.4028234663852886e38f);
  g.scalar("scale", 0.125f);
  g.node("Where", {"le", "zero", "lowest"}, "M");
  g.input("Q", {4, 16, 32});
  g.input("KT", {4, 32, 16});
  g.input("V", {4, 16, 32});
  g.output("O2", {4, 16, 32});
  g.output("between", {4, 16, 32});  // declared, so its shape is known past the Sin
  for (const std::string layer : {"1", "2"}) {
    const std::string q = layer == "1" ? "Q" : "between";
    g.node("MatMul", {q, "KT"}, "qk" + layer);
    g.node("Mul", {"qk" + layer, "scale"}, "scores" + layer);
    g.node("Add", {"scores" + layer, "M"}, "masked" + layer);
    OnnxGraph::attr(g.node("Softmax", {"masked" + layer}, "p" + layer), "axis", int64_t{-1});
    g.node("MatMul", {"p" + layer, "V"}, "O" + layer);
    if (layer == "1") g.node("Sin", {"O1"}, "between");  // no mapping: left to the framework
  }
  const ImportedModel m = g.import("shared_mask");
  int causal = 0;
  for (const Subgraph& s : m.subgraphs) {
    causal += static_cast<int>(s.causalMasks.size());
    for (const BoundInput& in : s.inputs) EXPECT_NE(in.value, "M") << s.name;
  }
  EXPECT_EQ(causal, 2);
  EXPECT_EQ(m.subgraphs.size(), 2u);
  ASSERT_EQ(m.unsupported.size(), 2u);
  for (const LeftOut& left : m.unsupported) {
    EXPECT_EQ(left.reason, left.op == "Where" ? kMaskSourceReason : "no mapping for ONNX op 'Sin'")
        << left.node;
  }
}

TEST(CausalMask, TriluOfAnExpandedMinusInfinityIsCausal) {
  OnnxGraph g;  // torch.triu(torch.full((S, S), -inf), 1) as an exporter writes it
  g.scalar("minus_inf", -INFINITY);
  int64Initializer(g, "shape", {16, 16});
  int64Initializer(g, "k", {1});
  g.node("Expand", {"minus_inf", "shape"}, "full");
  g.node("Trilu", {"full", "k"}, "M");
  const ImportedModel m = attention(g, "causal_trilu", 4, 16, 16, "M");
  ASSERT_EQ(m.subgraphs.size(), 1u);
  EXPECT_TRUE(m.unsupported.empty());
  expectCausalAttention(m.subgraphs[0], 4, 16, 16, 16);
}

TEST(CausalMask, SlidingWindowMaskStaysAnAddedInput) {
  OnnxGraph g;  // also masks keys more than 4 behind: not the causal pattern
  maskInitializer(g, "M", {16, 16}, kHalfMinusInf,
                  [](int64_t r, int64_t c) { return c <= r && c + 4 > r; });
  const ImportedModel m = attention(g, "sliding_window", 4, 16, 16, "M");
  ASSERT_EQ(m.subgraphs.size(), 1u);
  const Subgraph& s = m.subgraphs[0];
  EXPECT_TRUE(s.causalMasks.empty());
  ASSERT_EQ(s.inputs.size(), 4u);
  EXPECT_EQ(s.inputs[2].value, "M");
  EXPECT_EQ(graph::programToText(s.program).find("causal_mask"), std::string::npos);
  EXPECT_FALSE(subgraphJson(s).contains("causal_masks"));
}

TEST(CausalMask, MaskComputedFromAGraphInputStaysAnAddedInput) {
  OnnxGraph g;  // a causal constant plus a padding mask given at run time
  maskInitializer(g, "C", {16, 16}, kHalfMinusInf, [](int64_t r, int64_t c) { return c <= r; });
  g.input("padding", {4, 16, 16});
  g.node("Add", {"C", "padding"}, "M");
  const ImportedModel m = attention(g, "input_mask", 4, 16, 16, "M");
  ASSERT_EQ(m.subgraphs.size(), 1u);
  const Subgraph& s = m.subgraphs[0];
  EXPECT_TRUE(s.causalMasks.empty());
  EXPECT_EQ(graph::programToText(s.program).find("causal_mask"), std::string::npos);
  ASSERT_EQ(s.inputs.size(), 5u);  // Q, KT, C, padding and V
}

// SDPA(is_causal=True) as the FX front end writes it (python/mugraph/fx_graph.py).
nlohmann::json isCausalGraph(int64_t rows, int64_t keys) {
  using nlohmann::json;
  json values = json::array(), nodes = json::array();
  auto value = [&](const std::string& name, std::vector<int64_t> shape) {
    values.push_back({{"name", name}, {"type", "float16"}, {"shape", shape}});
  };
  auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& out,
                  json attributes = json::object()) {
    json n = {{"name", out}, {"op", op}, {"inputs", in}, {"outputs", {out}}};
    if (!attributes.empty()) n["attributes"] = attributes;
    nodes.push_back(n);
  };
  value("Q", {1, 4, rows, 32});
  value("KT", {1, 4, 32, keys});
  value("V", {1, 4, keys, 32});
  value("qk", {1, 4, rows, keys});
  node("MatMul", {"Q", "KT"}, "qk");
  values.push_back({{"name", "scale"}, {"type", "float16"}, {"shape", json::array()}});
  value("scores", {1, 4, rows, keys});
  node("Mul", {"qk", "scale"}, "scores");
  value("attention0.causal_mask", {rows, keys});
  node("CausalMask", {}, "attention0.causal_mask");
  value("masked", {1, 4, rows, keys});
  node("Add", {"scores", "attention0.causal_mask"}, "masked");
  value("p", {1, 4, rows, keys});
  node("Softmax", {"masked"}, "p", {{"axis", -1}});
  value("O", {1, 4, rows, 32});
  node("MatMul", {"p", "V"}, "O");
  return {{"format", "mugraph.graph"},
          {"version", 1},
          {"name", "sdpa"},
          {"opset", 21},
          {"values", values},
          {"constants", json::array({{{"name", "scale"}, {"values", {0.125}}}})},
          {"nodes", nodes},
          {"inputs", {"Q", "KT", "V"}},
          {"outputs", {"O"}}};
}

TEST(CausalMask, IsCausalNodeOfTheFxFrontEndIsCausalStructure) {
  const ImportedModel m = partitionModel(modelFromGraphJson(isCausalGraph(16, 16), "sdpa.json"));
  ASSERT_EQ(m.subgraphs.size(), 1u);
  EXPECT_TRUE(m.unsupported.empty());
  const Subgraph& s = m.subgraphs[0];
  expectCausalAttention(s, 4, 16, 16, 16);
  EXPECT_EQ(s.causalMasks[0].mask, "attention0.causal_mask");
  EXPECT_NE(std::find(s.nodes.begin(), s.nodes.end(), "attention0.causal_mask"), s.nodes.end());
}

TEST(CausalMask, NonSquareIsCausalNodeStaysAMaskTheFrameworkMakes) {
  // SDPA's is_causal aligns the diagonal top-left: not the IR's bottom-right for 8 x 16.
  const ImportedModel m = partitionModel(modelFromGraphJson(isCausalGraph(8, 16), "sdpa.json"));
  ASSERT_EQ(m.subgraphs.size(), 1u);
  EXPECT_TRUE(m.subgraphs[0].causalMasks.empty());
  ASSERT_EQ(m.unsupported.size(), 1u);
  EXPECT_EQ(m.unsupported[0].op, "CausalMask");
}

}  // namespace
}  // namespace mugraph::onnx_import
