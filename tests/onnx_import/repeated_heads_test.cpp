// GQA's repeated KV heads read as views: the exported grouped-query attention becomes the
// folded program over the KV buffers, and it computes what the model computes (each query
// head h attends with KV head h / rep), checked in double against the attention written out
// head by head. Where a mask or RoPE table broadcasts over the query rows, the fold is not
// applied and the subgraph reads the repeats the framework makes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "graph/program_text.h"
#include "onnx_import/import_model.h"
#include "verify/interpreter.h"

namespace mugraph::onnx_import {
namespace {

std::string model(const std::string& name) {
  return std::string(MUGRAPH_SOURCE_DIR) + "/tests/onnx_import/models/" + name + ".onnx";
}

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
    const ImportedModel m = importModel(model(name), {});
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

TEST(RepeatedHeads, MaskAndRopeOverTheRowsKeepTheRepeats) {
  const ImportedModel m = importModel(model("decoder_block"), {});
  int expands = 0;
  for (const LeftOut& left : m.unsupported) expands += left.op == "Expand";
  EXPECT_EQ(expands, 2);
  for (const Subgraph& s : m.subgraphs) EXPECT_EQ(s.headFold, "") << s.name;
}

}  // namespace
}  // namespace mugraph::onnx_import
