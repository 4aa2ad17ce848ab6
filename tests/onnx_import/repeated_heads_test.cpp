// GQA's repeated KV heads read as views: the exported grouped-query attention becomes the
// folded program over the KV buffers, and it computes what the model computes (each query
// head h attends with KV head h / rep), checked in double against the attention written out
// head by head. A mask broadcast over the query heads is read tiled along the folded rows
// (graph JSON as the FX front end writes it: repeat_kv with a copy before the Reshape); where
// the query heads come through a transposing view (the exported decoder block), the fold is
// not applied and the subgraph reads the repeats the framework makes.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "graph/program_text.h"
#include "onnx_import/graph_json.h"
#include "onnx_import/import_model.h"
#include "tests/onnx_import/exported_models.h"
#include "verify/interpreter.h"

namespace mugraph::onnx_import {
namespace {

constexpr int kHeads = 8, kKvHeads = 2, kRows = 128, kKeys = 128, kDim = 64;

std::vector<double> normal(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

// softmax(q kᵀ / √d) v for every query head h with KV head h / (heads / kv heads).
std::vector<double> attentionByHead(const std::vector<double>& q, const std::vector<double>& k,
                                    const std::vector<double>& v) {
  std::vector<double> out(q.size());
  const int rep = kHeads / kKvHeads;
  for (int h = 0; h < kHeads; ++h) {
    const int g = h / rep;
    for (int s = 0; s < kRows; ++s) {
      std::vector<double> p(kKeys);
      double max = -INFINITY, sum = 0;
      for (int t = 0; t < kKeys; ++t) {
        double dot = 0;
        for (int d = 0; d < kDim; ++d) {
          dot += q[(h * kRows + s) * kDim + d] * k[(g * kKeys + t) * kDim + d];
        }
        p[t] = dot / std::sqrt(double{kDim});
        max = std::max(max, p[t]);
      }
      for (double& x : p) sum += (x = std::exp(x - max));
      for (int d = 0; d < kDim; ++d) {
        double acc = 0;
        for (int t = 0; t < kKeys; ++t) acc += p[t] / sum * v[(g * kKeys + t) * kDim + d];
        out[(h * kRows + s) * kDim + d] = acc;
      }
    }
  }
  return out;
}

TEST(RepeatedHeads, GqaAttentionReadsTheKvBuffersAndComputesTheModel) {
  for (const char* name : {"gqa_attention_core", "gqa_attention_core_legacy"}) {
    const ImportedModel m = importModel(exportedModel(name), {});
    ASSERT_EQ(m.subgraphs.size(), 1u) << name;
    EXPECT_TRUE(m.unsupported.empty()) << name << ": " << m.unsupported.front().node;
    const Subgraph& s = m.subgraphs[0];
    EXPECT_EQ(s.headFold, "8 query heads read as 2 KV groups of 4 (rows folded)");
    ASSERT_EQ(s.inputs.size(), 3u);
    EXPECT_EQ(s.inputs[1].buffer, "k");
    EXPECT_TRUE(s.inputs[1].transposed);
    EXPECT_EQ(s.inputs[2].buffer, "v");
    const graph::Program& p = s.program;
    EXPECT_EQ(p.tensors[p.inputs[0]].shape,
              (graph::Dims{kKvHeads, kHeads / kKvHeads * kRows, kDim}));
    EXPECT_EQ(p.tensors[p.inputs[1]].shape, (graph::Dims{kKvHeads, kDim, kKeys}));

    // The buffers as the model holds them: q [1, 8, 128, 64], k and v [1, 2, 128, 64].
    std::mt19937_64 rng(7);
    const std::vector<double> q = normal(kHeads * kRows * kDim, rng);
    const std::vector<double> k = normal(kKvHeads * kKeys * kDim, rng);
    const std::vector<double> v = normal(kKvHeads * kKeys * kDim, rng);
    std::vector<double> kT(k.size());  // the interpreter takes the logical [2, 64, 128]
    for (int g = 0; g < kKvHeads; ++g) {
      for (int t = 0; t < kKeys; ++t) {
        for (int d = 0; d < kDim; ++d)
          kT[(g * kDim + d) * kKeys + t] = k[(g * kKeys + t) * kDim + d];
      }
    }
    verify::TensorMap<double> inputs;
    inputs[p.tensors[p.inputs[0]].name] = {p.tensors[p.inputs[0]].shape, q};
    inputs[p.tensors[p.inputs[1]].name] = {p.tensors[p.inputs[1]].shape, kT};
    inputs[p.tensors[p.inputs[2]].name] = {p.tensors[p.inputs[2]].shape, v};
    const verify::TensorMap<double> out = verify::evaluate(p, inputs);
    const std::vector<double>& y = out.at(p.tensors[p.outputs[0]].name).data;
    const std::vector<double> expected = attentionByHead(q, k, v);
    ASSERT_EQ(y.size(), expected.size());
    double worst = 0;
    for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::abs(y[i] - expected[i]));
    EXPECT_LT(worst, 1e-12) << name;
  }
}

// Grouped-query attention with an additive mask as the FX front end writes it: q [1, 4, 8, 16],
// K and V [1, 2, 8, 16] repeated by Reshape (unsqueeze) → Expand → Identity (clone) → Reshape,
// softmax(q·Kᵀ/4 + M)·V with M [1, 1, 8, 8].
constexpr int kSmallHeads = 4, kSmallKv = 2, kSmallRows = 8, kSmallDim = 16;

// With `dropBatch`, the repeats merge into [h, s, d], without the batch's leading 1, as the
// dynamo exporter writes them at real sizes (Kᵀ then a swap of the last two of three dims).
nlohmann::json maskedGqaGraph(bool dropBatch = false) {
  using nlohmann::json;
  json g = {{"format", "mugraph.graph"}, {"version", 1}, {"name", "gqa"}, {"opset", 21}};
  json values = json::array(), constants = json::array(), nodes = json::array();
  auto value = [&](const std::string& name, std::vector<int64_t> shape) {
    values.push_back({{"name", name}, {"type", "float16"}, {"shape", shape}});
  };
  auto shapeConstant = [&](const std::string& name, std::vector<int64_t> shape) {
    values.push_back({{"name", name},
                      {"type", "int64"},
                      {"shape", std::vector<int64_t>{static_cast<int64_t>(shape.size())}}});
    std::vector<double> numbers(shape.begin(), shape.end());
    constants.push_back({{"name", name}, {"values", numbers}});
  };
  auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& out,
                  json attributes = json::object()) {
    json n = {{"name", out}, {"op", op}, {"inputs", in}, {"outputs", {out}}};
    if (!attributes.empty()) n["attributes"] = attributes;
    nodes.push_back(n);
  };
  const int64_t h = kSmallHeads, kv = kSmallKv, s = kSmallRows, d = kSmallDim;
  value("q", {1, h, s, d});
  value("K", {1, kv, s, d});
  value("V", {1, kv, s, d});
  value("M", {1, 1, s, s});
  for (const std::string x : {"K", "V"}) {
    value(x + "u", {1, kv, 1, s, d});
    shapeConstant(x + "u.shape", {1, kv, 1, s, d});
    node("Reshape", {x, x + "u.shape"}, x + "u");
    value(x + "e", {1, kv, h / kv, s, d});
    shapeConstant(x + "e.shape", {1, kv, h / kv, s, d});
    node("Expand", {x + "u", x + "e.shape"}, x + "e");
    value(x + "c", {1, kv, h / kv, s, d});
    node("Identity", {x + "e"}, x + "c");
    const std::vector<int64_t> merged =
        dropBatch ? std::vector<int64_t>{h, s, d} : std::vector<int64_t>{1, h, s, d};
    value(x + "r", merged);
    shapeConstant(x + "r.shape", merged);
    node("Reshape", {x + "c", x + "r.shape"}, x + "r");
  }
  if (dropBatch) {
    value("kt", {h, d, s});
    node("Transpose", {"Kr"}, "kt", {{"perm", {0, 2, 1}}});
  } else {
    value("kt", {1, h, d, s});
    node("Transpose", {"Kr"}, "kt", {{"perm", {0, 1, 3, 2}}});
  }
  value("qk", {1, h, s, s});
  node("MatMul", {"q", "kt"}, "qk");
  values.push_back({{"name", "scale"}, {"type", "float16"}, {"shape", json::array()}});
  constants.push_back({{"name", "scale"}, {"values", {0.25}}});
  value("scaled", {1, h, s, s});
  node("Mul", {"qk", "scale"}, "scaled");
  value("masked", {1, h, s, s});
  node("Add", {"scaled", "M"}, "masked");
  value("p", {1, h, s, s});
  node("Softmax", {"masked"}, "p", {{"axis", -1}});
  value("out", {1, h, s, d});
  node("MatMul", {"p", "Vr"}, "out");
  g["values"] = values;
  g["constants"] = constants;
  g["nodes"] = nodes;
  g["inputs"] = {"q", "K", "V", "M"};
  g["outputs"] = {"out"};
  return g;
}

void expectMaskedGqaFolded(const ImportedModel& m) {
  ASSERT_EQ(m.subgraphs.size(), 1u);
  const Subgraph& s = m.subgraphs[0];
  EXPECT_EQ(s.headFold, "4 query heads read as 2 KV groups of 2 (rows folded)");
  const int rep = kSmallHeads / kSmallKv;
  std::map<std::string, BoundInput> bound;
  for (const BoundInput& in : s.inputs) bound[in.buffer] = in;
  ASSERT_EQ(bound.size(), 4u);
  EXPECT_EQ(bound["M"].tiling.times, rep);
  EXPECT_EQ(bound["M"].tiling.dimFromEnd, 2);
  EXPECT_TRUE(bound["K"].transposed);  // the KV buffers themselves, not the repeats
  EXPECT_EQ(bound["V"].tiling.times, 1);

  // What the binding gives: the buffers as they are, M stacked rep times along its rows.
  std::mt19937_64 rng(11);
  const int h = kSmallHeads, kv = kSmallKv, rows = kSmallRows, d = kSmallDim;
  const std::vector<double> q = normal(h * rows * d, rng), k = normal(kv * rows * d, rng),
                            v = normal(kv * rows * d, rng), mask = normal(rows * rows, rng);
  std::vector<double> kT(k.size()), tiled;
  for (int g = 0; g < kv; ++g) {
    for (int t = 0; t < rows; ++t) {
      for (int x = 0; x < d; ++x) kT[(g * d + x) * rows + t] = k[(g * rows + t) * d + x];
    }
  }
  for (int r = 0; r < rep; ++r) tiled.insert(tiled.end(), mask.begin(), mask.end());
  const graph::Program& p = s.program;
  verify::TensorMap<double> inputs;
  for (const BoundInput& in : s.inputs) {
    const graph::TensorDesc& t = p.tensors[*p.findTensor(in.irName)];
    const std::vector<double>& data = in.buffer == "q"   ? q
                                      : in.buffer == "K" ? kT
                                      : in.buffer == "V" ? v
                                                         : tiled;
    inputs[t.name] = {t.shape, data};
  }
  const verify::TensorMap<double> out = verify::evaluate(p, inputs);
  const std::vector<double>& y = out.at(p.tensors[p.outputs[0]].name).data;
  ASSERT_EQ(y.size(), q.size());
  double worst = 0;  // softmax(q·kᵀ/4 + M)·v, query head i with KV head i / rep
  for (int i = 0; i < h; ++i) {
    const int g = i / rep;
    for (int row = 0; row < rows; ++row) {
      std::vector<double> logits(rows);
      double max = -INFINITY, sum = 0;
      for (int t = 0; t < rows; ++t) {
        double dot = 0;
        for (int x = 0; x < d; ++x) dot += q[(i * rows + row) * d + x] * k[(g * rows + t) * d + x];
        logits[t] = dot * 0.25 + mask[row * rows + t];
        max = std::max(max, logits[t]);
      }
      for (double& l : logits) sum += (l = std::exp(l - max));
      for (int x = 0; x < d; ++x) {
        double expected = 0;
        for (int t = 0; t < rows; ++t) expected += logits[t] / sum * v[(g * rows + t) * d + x];
        worst = std::max(worst, std::abs(y[(i * rows + row) * d + x] - expected));
      }
    }
  }
  EXPECT_LT(worst, 1e-12);
}

TEST(RepeatedHeads, AMaskOverTheHeadsIsReadTiledAlongTheFoldedRows) {
  expectMaskedGqaFolded(partitionModel(modelFromGraphJson(maskedGqaGraph(), "gqa.json")));
}

TEST(RepeatedHeads, RepeatsMergedWithoutTheBatchDimFoldAlike) {
  expectMaskedGqaFolded(
      partitionModel(modelFromGraphJson(maskedGqaGraph(/*dropBatch=*/true), "gqa.json")));
}

TEST(RepeatedHeads, MaskAndRopeOverTheRowsKeepTheRepeats) {
  const ImportedModel m = importModel(exportedModel("decoder_block"), {});
  int expands = 0;
  for (const LeftOut& left : m.unsupported) expands += left.op == "Expand";
  EXPECT_EQ(expands, 2);
  for (const Subgraph& s : m.subgraphs) EXPECT_EQ(s.headFold, "") << s.name;
}

}  // namespace
}  // namespace mugraph::onnx_import
