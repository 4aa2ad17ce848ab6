// Decoder LMs from `transformers` (Llama, Mistral, Qwen3 with QK-norm), exported with
// PyTorch's default exporter (tools/python/export_hf_models.py): the exporter decomposes
// scaled_dot_product_attention into MatMul, Softmax and a NaN guard `Where(IsNaN(p), 0, p)`.
// The guard reads as the softmax, so each layer's Q·Kᵀ, softmax and P·V land in one subgraph.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "graph/program_text.h"
#include "onnx_import/import_model.h"

namespace mugraph::onnx_import {
namespace {

std::string model(const std::string& name) {
  return std::string(MUGRAPH_SOURCE_DIR) + "/tests/onnx_import/models/" + name + ".onnx";
}

int countOf(const std::vector<std::string>& ops, const std::string& op) {
  return static_cast<int>(std::count(ops.begin(), ops.end(), op));
}

TEST(HfModels, EachLayersAttentionIsOneSubgraphThroughTheNanGuard) {
  for (const std::string name : {"hf_llama", "hf_mistral", "hf_qwen3"}) {
    const ImportedModel m = importModel(model(name), {});
    int softmaxes = 0;
    for (const Subgraph& s : m.subgraphs) {
      const int softmax = countOf(s.ops, "Softmax");
      if (softmax == 0) continue;
      softmaxes += softmax;
      // Q·Kᵀ and P·V beside each softmax, the guard inside: one attention per subgraph.
      EXPECT_EQ(softmax, 1) << name << ": " << s.name;
      EXPECT_GE(countOf(s.ops, "MatMul"), 2) << name << ": " << s.name;
      EXPECT_EQ(countOf(s.ops, "IsNaN"), 1) << name << ": " << s.name;
      EXPECT_EQ(countOf(s.ops, "Where"), 1) << name << ": " << s.name;
      // P·V reads the softmax's quotient: the guard added no op of its own.
      const std::string text = graph::programToText(s.program);
      EXPECT_NE(text.find("= matmul(div("), std::string::npos) << name << "\n" << text;
    }
    EXPECT_EQ(softmaxes, 2) << name << ": two layers";
    for (const LeftOut& u : m.unsupported) {
      EXPECT_NE(u.op, "IsNaN") << name << ": " << u.node << ": " << u.reason;
      EXPECT_NE(u.op, "Where") << name << ": " << u.node << ": " << u.reason;
    }
  }
}

}  // namespace
}  // namespace mugraph::onnx_import
