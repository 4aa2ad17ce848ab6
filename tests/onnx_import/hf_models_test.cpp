// Decoder LMs from `transformers` (Llama, Mistral, Qwen3 with QK-norm), exported with
// PyTorch's default exporter (tools/python/export_hf_models.py): the exporter decomposes
// scaled_dot_product_attention into MatMul, Softmax and a NaN guard `Where(IsNaN(p), 0, p)`.
// The guard reads as the softmax, so each layer's Q·Kᵀ, softmax and P·V land in one subgraph;
// RoPE's rotate_half (Slice, Slice, Neg, Concat) is the IR's rotate_half; the head transposes
// are heads_transposed reads, or, after Qwen3's per-head norms, computed in the head order;
// the causal mask (an initializer) is the IR's causal_mask.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "graph/program_text.h"
#include "graph/types.h"
#include "onnx_import/import_model.h"
#include "onnx_import/onnx_model.h"
#include "tests/onnx_import/exported_models.h"

namespace mugraph::onnx_import {
namespace {

int countOf(const std::vector<std::string>& ops, const std::string& op) {
  return static_cast<int>(std::count(ops.begin(), ops.end(), op));
}

TEST(HfModels, EachLayersAttentionIsOneSubgraphThroughTheNanGuard) {
  for (const std::string name : {"hf_llama", "hf_mistral", "hf_qwen3"}) {
    const ImportedModel m = importModel(exportedModel(name), {});
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
      // P·V reads the softmax's quotient (e / sum e): the guard added no op of its own.
      const std::string text = graph::programToText(s.program);
      std::smatch quotient;
      ASSERT_TRUE(std::regex_search(text, quotient, std::regex(R"((\S+) = div\(\S+_exp, )")))
          << text;
      EXPECT_NE(text.find("= matmul(" + quotient[1].str() + ", "), std::string::npos)
          << name << "\n"
          << text;
      // transformers' causal mask, folded by the exporter into an initializer of finfo.min
      // above the diagonal, is causal_mask: no mask is read.
      EXPECT_EQ(s.causalMasks.size(), 1u) << name << "\n" << text;
      EXPECT_NE(text.find("causal_mask("), std::string::npos) << name << "\n" << text;
      for (const CausalMaskRead& mask : s.causalMasks) {
        for (const BoundInput& in : s.inputs) EXPECT_NE(in.value, mask.mask) << name;
      }
    }
    EXPECT_EQ(softmaxes, 2) << name << ": two layers";
    for (const LeftOut& u : m.unsupported) {
      EXPECT_NE(u.op, "IsNaN") << name << ": " << u.node << ": " << u.reason;
      EXPECT_NE(u.op, "Where") << name << ": " << u.node << ": " << u.reason;
    }
  }
}

int countIn(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HfModels, AtMostThreeSubgraphsPerLayerWithRopeInsideAndEveryNodePlacedOrExplained) {
  constexpr int kLayers = 2;
  for (const std::string name : {"hf_llama", "hf_mistral", "hf_qwen3"}) {
    const ImportedModel m = importModel(exportedModel(name), {});
    // Three per layer, plus the last layer's o_proj and MLP with the final norm and lm_head:
    // they run after that layer's attention, so a convex subgraph cannot hold them with its
    // Q/K/V projections (each earlier layer's join the next layer's projections).
    EXPECT_LE(m.subgraphs.size(), static_cast<size_t>(3 * kLayers + 1)) << name;
    std::set<std::string> placed;
    int rotations = 0, headsReads = 0;
    for (const Subgraph& s : m.subgraphs) {
      placed.insert(s.nodes.begin(), s.nodes.end());
      const std::string text = graph::programToText(s.program);
      rotations += countIn(text, "= rotate_half(");
      for (const BoundInput& in : s.inputs) {
        headsReads += in.layout == graph::Layout::HeadsTransposed;
      }
      // Attention reads its rotated queries in the same subgraph.
      if (countOf(s.ops, "Softmax") == 1) {
        EXPECT_EQ(countOf(s.ops, "Concat"), 1) << name << ": " << s.name;
        EXPECT_EQ(countIn(text, "= rotate_half("), 1) << name << "\n" << text;
      }
      // Qwen3's per-head q/k norms before RoPE sit with it, computed in the head order.
      if (name == "hf_qwen3" && countOf(s.ops, "Concat") > 0) {
        EXPECT_GE(countOf(s.ops, "ReduceMean"), 1) << name << ": " << s.name;
        EXPECT_GE(countOf(s.ops, "Transpose"), 1) << name << ": " << s.name;
      }
    }
    // Queries and keys of each layer rotated in the IR, read per head without a copy.
    EXPECT_EQ(rotations, 2 * kLayers) << name;
    EXPECT_GE(headsReads, 2 * kLayers) << name;
    const Model loaded = loadModel(exportedModel(name), {});
    std::set<std::string> leftOps;
    for (const LeftOut& u : m.unsupported) {
      EXPECT_FALSE(u.reason.empty()) << name << ": " << u.node;
      EXPECT_FALSE(placed.count(u.node)) << name << ": " << u.node << " placed and left out";
      placed.insert(u.node);
      leftOps.insert(u.op);
    }
    EXPECT_EQ(placed.size(), loaded.nodes.size()) << name << ": every node placed or explained";
    for (const Node& node : loaded.nodes) {
      if (node.op == "Slice" || node.op == "Neg" || node.op == "Concat") {
        EXPECT_FALSE(leftOps.count(node.op)) << name << ": RoPE's " << node.op << " left out";
      }
    }
    // What stays with the framework: the embedding, GQA's repeats of K and V (and the views
    // around them), and the attention output's transpose back before o_proj.
    EXPECT_TRUE(leftOps.count("Gather")) << name;
    for (const std::string& op : leftOps) {
      EXPECT_TRUE(op == "Gather" || op == "Expand" || op == "Unsqueeze" || op == "Reshape" ||
                  op == "Transpose")
          << name << ": " << op << " left out";
    }
  }
}

// The same Llama exported for a batch of two prompts (export_hf_models.py --batch 2): the
// linear layers' reshapes between [2, 16, h] and [32, h] are aliases (row_merge.h), so the
// model partitions into the same subgraphs of the same ops as at batch 1, each writing twice
// the values.
TEST(HfModels, ABatchOfTwoPromptsPartitionsAsOnePromptDoes) {
  const ImportedModel one = importModel(exportedModel("hf_llama"), {});
  const ImportedModel two = importModel(exportedModel("hf_llama_b2"), {});
  ASSERT_EQ(two.subgraphs.size(), one.subgraphs.size());
  for (size_t i = 0; i < one.subgraphs.size(); ++i) {
    const Subgraph &a = one.subgraphs[i], &b = two.subgraphs[i];
    std::vector<std::string> opsA = a.ops, opsB = b.ops;
    std::sort(opsA.begin(), opsA.end());
    std::sort(opsB.begin(), opsB.end());
    EXPECT_EQ(opsB, opsA) << b.name;
    ASSERT_EQ(b.program.outputs.size(), a.program.outputs.size()) << b.name;
    for (size_t o = 0; o < a.program.outputs.size(); ++o) {
      const graph::TensorDesc &x = a.program.tensors[a.program.outputs[o]],
                              &y = b.program.tensors[b.program.outputs[o]];
      EXPECT_EQ(graph::elementCount(y.shape), 2 * graph::elementCount(x.shape))
          << b.name << ": " << y.name;
    }
  }
  EXPECT_EQ(two.unsupported.size(), one.unsupported.size());
}

}  // namespace
}  // namespace mugraph::onnx_import
