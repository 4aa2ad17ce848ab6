// A batch of sequences read as rows (row_merge.h): a model at batch b holds [b, s, h] and its
// linear layers view it as [b·s, h]; where every op on the way acts on rows alone, the views
// are aliases inside one subgraph. Where an op needs the dims apart, the value keeps them.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "graph/types.h"
#include "onnx_import/graph_json.h"
#include "onnx_import/import_model.h"
#include "verify/interpreter.h"

namespace mugraph::onnx_import {
namespace {

using nlohmann::json;

constexpr int64_t kBatch = 2, kSeq = 8, kHidden = 16, kWide = 24;

struct RowGraphJson {
  json values = json::array(), constants = json::array(), nodes = json::array();

  void value(const std::string& name, std::vector<int64_t> shape, const char* type = "float") {
    values.push_back({{"name", name}, {"type", type}, {"shape", shape}});
  }
  void constant(const std::string& name, std::vector<double> numbers, const char* type) {
    value(name, {static_cast<int64_t>(numbers.size())}, type);
    constants.push_back({{"name", name}, {"values", numbers}});
  }
  void node(const std::string& op, std::vector<std::string> in, const std::string& out,
            std::vector<int64_t> shape, json attributes = json::object()) {
    value(out, shape);
    json n = {{"name", out}, {"op", op}, {"inputs", in}, {"outputs", {out}}};
    if (!attributes.empty()) n["attributes"] = attributes;
    nodes.push_back(n);
  }
  Model model(std::vector<std::string> inputs, std::vector<std::string> outputs) const {
    const json g = {
        {"format", "mugraph.graph"}, {"version", 1},           {"name", "g"},    {"opset", 21},
        {"values", values},          {"constants", constants}, {"nodes", nodes}, {"inputs", inputs},
        {"outputs", outputs}};
    return modelFromGraphJson(g, "rows.json");
  }
};

// y = (x + r)·w viewed as PyTorch's linear layer does it, then RMS-normed with weight g:
// x, r [b, s, h]; the sum viewed [b·s, h]; the product viewed back [b, s, n]; its mean
// square over the last axis; a table of positions [tableRows, n] added before the norm where
// given (broadcast over the batch): the input `table`, or with `computedTable`, exp of it.
RowGraphJson linearThenNorm(int64_t tableRows = 0, bool computedTable = false) {
  RowGraphJson g;
  g.value("x", {kBatch, kSeq, kHidden});
  g.value("r", {kBatch, kSeq, kHidden});
  g.value("w", {kHidden, kWide});
  g.value("g", {kWide});
  g.constant("rows", {kBatch * kSeq, kHidden}, "int64");
  g.constant("back", {kBatch, kSeq, kWide}, "int64");
  g.constant("two", {2.0}, "float");
  g.constant("eps", {1e-6}, "float");
  g.node("Add", {"x", "r"}, "sum", {kBatch, kSeq, kHidden});
  g.node("Reshape", {"sum", "rows"}, "flat", {kBatch * kSeq, kHidden});
  g.node("MatMul", {"flat", "w"}, "mm", {kBatch * kSeq, kWide});
  g.node("Reshape", {"mm", "back"}, "y", {kBatch, kSeq, kWide});
  std::string normed = "y";
  if (tableRows > 0) {
    g.value("table", {tableRows, kWide});
    std::string table = "table";
    if (computedTable) {
      g.node("Exp", {"table"}, "exp_table", {tableRows, kWide});
      table = "exp_table";
    }
    g.node("Add", {"y", table}, "shifted", {kBatch, kSeq, kWide});
    normed = "shifted";
  }
  g.node("Pow", {normed, "two"}, "sq", {kBatch, kSeq, kWide});
  g.node("ReduceMean", {"sq"}, "ms", {kBatch, kSeq, 1}, {{"axes", {-1}}, {"keepdims", 1}});
  g.node("Add", {"ms", "eps"}, "mse", {kBatch, kSeq, 1});
  g.node("Sqrt", {"mse"}, "rms", {kBatch, kSeq, 1});
  g.node("Div", {normed, "rms"}, "n", {kBatch, kSeq, kWide});
  g.node("Mul", {"n", "g"}, "out", {kBatch, kSeq, kWide});
  return g;
}

std::vector<double> normals(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = normal(rng);
  return v;
}

// What linearThenNorm computes, row by row of the batch's [b·s, n], against `got`; with a
// "table" in `data`, row (i, j) adds the table's row j.
void expectLinearThenNorm(const std::vector<double>& got,
                          std::map<std::string, std::vector<double>>& data) {
  ASSERT_EQ(got.size(), static_cast<size_t>(kBatch * kSeq * kWide));
  for (int64_t row = 0; row < kBatch * kSeq; ++row) {
    std::vector<double> y(kWide, 0.0);
    double ms = 0;
    for (int64_t c = 0; c < kWide; ++c) {
      for (int64_t k = 0; k < kHidden; ++k) {
        const int64_t at = row * kHidden + k;
        y[c] += (data["x"][at] + data["r"][at]) * data["w"][k * kWide + c];
      }
      if (data.count("table")) y[c] += data["table"][(row % kSeq) * kWide + c];
      ms += y[c] * y[c] / kWide;
    }
    for (int64_t c = 0; c < kWide; ++c) {
      const double expected = y[c] / std::sqrt(ms + 1e-6) * data["g"][c];
      EXPECT_NEAR(got[row * kWide + c], expected, 1e-9) << "row " << row << " col " << c;
    }
  }
}

TEST(RowMerge, ALinearLayerAtBatchTwoIsOneSubgraphWithItsNeighbours) {
  const ImportedModel m = partitionModel(linearThenNorm().model({"x", "r", "w", "g"}, {"out"}));
  ASSERT_EQ(m.subgraphs.size(), 1u) << (m.unsupported.empty() ? "" : m.unsupported[0].reason);
  EXPECT_TRUE(m.unsupported.empty()) << m.unsupported[0].node << ": " << m.unsupported[0].reason;
  const Subgraph& s = m.subgraphs[0];
  const graph::Program& p = s.program;
  // Every value of the batch is read as [b·s, ..]: the inputs, and the result.
  verify::TensorMap<double> inputs;
  std::map<std::string, std::vector<double>> data = {{"x", normals(kBatch * kSeq * kHidden, 1)},
                                                     {"r", normals(kBatch * kSeq * kHidden, 2)},
                                                     {"w", normals(kHidden * kWide, 3)},
                                                     {"g", normals(kWide, 4)}};
  for (const BoundInput& in : s.inputs) {
    const graph::TensorDesc& t = p.tensors[*p.findTensor(in.irName)];
    if (in.buffer == "x" || in.buffer == "r") {
      EXPECT_EQ(t.shape, (graph::Dims{kBatch * kSeq, kHidden})) << in.buffer;
    }
    ASSERT_TRUE(data.count(in.buffer)) << in.buffer;
    inputs[t.name] = {t.shape, data.at(in.buffer)};
  }
  ASSERT_EQ(inputs.size(), 4u);
  ASSERT_EQ(p.outputs.size(), 1u);
  EXPECT_EQ(p.tensors[p.outputs[0]].shape, (graph::Dims{kBatch * kSeq, kWide}));
  expectLinearThenNorm(verify::evaluate(p, inputs).at(p.tensors[p.outputs[0]].name).data, data);
}

// A table of one row per position read from memory, broadcast over the batch (GPT-2's
// position embeddings): the binding stacks it once per sequence, so the batch's rows read it
// as [b·s, n] and the layer is still one subgraph.
TEST(RowMerge, ATableOfPositionsFromMemoryIsReadStackedOverTheBatch) {
  const ImportedModel m =
      partitionModel(linearThenNorm(kSeq).model({"x", "r", "w", "g", "table"}, {"out"}));
  ASSERT_EQ(m.subgraphs.size(), 1u) << (m.unsupported.empty() ? "" : m.unsupported[0].reason);
  const Subgraph& s = m.subgraphs[0];
  const graph::Program& p = s.program;
  std::map<std::string, std::vector<double>> data = {{"x", normals(kBatch * kSeq * kHidden, 5)},
                                                     {"r", normals(kBatch * kSeq * kHidden, 6)},
                                                     {"w", normals(kHidden * kWide, 7)},
                                                     {"g", normals(kWide, 8)},
                                                     {"table", normals(kSeq * kWide, 9)}};
  verify::TensorMap<double> inputs;
  for (const BoundInput& in : s.inputs) {
    const graph::TensorDesc& t = p.tensors[*p.findTensor(in.irName)];
    ASSERT_TRUE(data.count(in.buffer)) << in.buffer;
    std::vector<double> given = data.at(in.buffer);
    if (in.buffer == "table") {
      EXPECT_EQ(in.tiling.dimFromEnd, 2);
      ASSERT_EQ(in.tiling.times, kBatch);
      EXPECT_EQ(t.shape, (graph::Dims{kBatch * kSeq, kWide}));
      for (int64_t i = 1; i < kBatch; ++i) {  // what the binding hands over
        given.insert(given.end(), data["table"].begin(), data["table"].end());
      }
    } else {
      EXPECT_EQ(in.tiling.times, 1) << in.buffer;
    }
    inputs[t.name] = {t.shape, given};
  }
  ASSERT_EQ(inputs.size(), 5u);
  expectLinearThenNorm(verify::evaluate(p, inputs).at(p.tensors[p.outputs[0]].name).data, data);
}

// The same table computed in the graph: a subgraph cannot read it stacked, so the sum keeps
// its batch apart, and with it the values the norm connects it to. The reshape back from the
// matmul stays a view between two subgraphs.
TEST(RowMerge, ATableComputedInTheGraphKeepsTheBatchApart) {
  const ImportedModel m =
      partitionModel(linearThenNorm(kSeq, true).model({"x", "r", "w", "g", "table"}, {"out"}));
  ASSERT_EQ(m.subgraphs.size(), 2u);
  for (const Subgraph& s : m.subgraphs) {
    const graph::Program& p = s.program;
    for (const BoundInput& in : s.inputs) {
      const graph::TensorDesc& t = p.tensors[*p.findTensor(in.irName)];
      EXPECT_EQ(in.tiling.times, 1) << in.buffer;
      if (in.value == "y") {
        EXPECT_EQ(t.shape, (graph::Dims{kBatch, kSeq, kWide}));
      }
    }
  }
}

// Keys viewed [b·h, t, d], transposed for bmm and viewed back [b, h, d, t] (how PyTorch's
// exporter writes SDPA at batch b > 1), with queries read through a head transpose, which keeps
// their batch apart: the reshape back of the transposed view is still a transposed read of the
// keys, the scores one subgraph.
TEST(RowMerge, AReshapeOfTheLeadingDimsOfATransposedViewKeepsTheView) {
  constexpr int64_t b = 2, h = 3, s = 4, t = 5, d = 8;
  RowGraphJson g;
  g.value("qs", {b, s, h, d});
  g.value("k", {b, h, t, d});
  g.constant("flat", {b * h, t, d}, "int64");
  g.constant("back", {b, h, d, t}, "int64");
  g.node("Transpose", {"qs"}, "q", {b, h, s, d}, {{"perm", {0, 2, 1, 3}}});
  g.node("Reshape", {"k", "flat"}, "kf", {b * h, t, d});
  g.node("Transpose", {"kf"}, "kt", {b * h, d, t}, {{"perm", {0, 2, 1}}});
  g.node("Reshape", {"kt", "back"}, "k4", {b, h, d, t});
  g.node("MatMul", {"q", "k4"}, "scores", {b, h, s, t});
  const ImportedModel m = partitionModel(g.model({"qs", "k"}, {"scores"}));
  ASSERT_EQ(m.subgraphs.size(), 1u) << (m.unsupported.empty() ? "" : m.unsupported[0].reason);
  EXPECT_TRUE(m.unsupported.empty()) << m.unsupported[0].node << ": " << m.unsupported[0].reason;
  const Subgraph& sub = m.subgraphs[0];
  const graph::Program& p = sub.program;
  const std::vector<double> qs = normals(b * s * h * d, 10), k = normals(b * h * t * d, 11);
  // The interpreter takes each input in its logical order; the layouts say how the program
  // reads the buffers (q heads-transposed out of qs, the keys transposed).
  std::vector<double> q(qs.size()), kT(k.size());
  for (int64_t n = 0; n < b; ++n) {
    for (int64_t head = 0; head < h; ++head) {
      for (int64_t i = 0; i < s; ++i) {
        for (int64_t x = 0; x < d; ++x) {
          q[((n * h + head) * s + i) * d + x] = qs[((n * s + i) * h + head) * d + x];
        }
      }
      for (int64_t j = 0; j < t; ++j) {
        for (int64_t x = 0; x < d; ++x) {
          kT[((n * h + head) * d + x) * t + j] = k[((n * h + head) * t + j) * d + x];
        }
      }
    }
  }
  verify::TensorMap<double> inputs;
  for (const BoundInput& in : sub.inputs) {
    const graph::TensorDesc& desc = p.tensors[*p.findTensor(in.irName)];
    ASSERT_TRUE(in.buffer == "qs" || in.buffer == "k") << in.buffer;
    EXPECT_EQ(in.layout,
              in.buffer == "k" ? graph::Layout::Transposed : graph::Layout::HeadsTransposed);
    inputs[desc.name] = {desc.shape, in.buffer == "qs" ? q : kT};
  }
  ASSERT_EQ(inputs.size(), 2u);
  const std::vector<double> got = verify::evaluate(p, inputs).at(p.tensors[p.outputs[0]].name).data;
  ASSERT_EQ(got.size(), static_cast<size_t>(b * h * s * t));
  for (int64_t n = 0; n < b; ++n) {
    for (int64_t head = 0; head < h; ++head) {
      for (int64_t i = 0; i < s; ++i) {
        for (int64_t j = 0; j < t; ++j) {
          double dot = 0;
          for (int64_t x = 0; x < d; ++x) {
            dot += qs[((n * s + i) * h + head) * d + x] * k[((n * h + head) * t + j) * d + x];
          }
          EXPECT_NEAR(got[((n * h + head) * s + i) * t + j], dot, 1e-9)
              << n << " " << head << " " << i << " " << j;
        }
      }
    }
  }
}

// Scores of a batch of heads plus a bias of one [s, t] per head, the same for every sequence
// (a relative-position bias [1, h, s, t]): the scores are matrices [b·h, s, t], and the bias is
// read stacked over the batch along its heads, [b·h, s, t].
TEST(RowMerge, APerHeadBiasIsReadStackedOverTheBatchOfMatrices) {
  constexpr int64_t b = 2, h = 3, s = 4, t = 5, d = 8;
  RowGraphJson g;
  g.value("q", {b, h, s, d});
  g.value("k", {b, h, d, t});
  g.value("bias", {1, h, s, t});
  g.node("MatMul", {"q", "k"}, "scores", {b, h, s, t});
  g.node("Add", {"scores", "bias"}, "biased", {b, h, s, t});
  g.node("Softmax", {"biased"}, "p", {b, h, s, t}, {{"axis", -1}});
  const ImportedModel m = partitionModel(g.model({"q", "k", "bias"}, {"p"}));
  ASSERT_EQ(m.subgraphs.size(), 1u) << (m.unsupported.empty() ? "" : m.unsupported[0].reason);
  const Subgraph& sub = m.subgraphs[0];
  const graph::Program& p = sub.program;
  EXPECT_EQ(p.tensors[p.outputs[0]].shape, (graph::Dims{b * h, s, t}));
  const std::vector<double> q = normals(b * h * s * d, 12), k = normals(b * h * d * t, 13),
                            bias = normals(h * s * t, 14);
  verify::TensorMap<double> inputs;
  for (const BoundInput& in : sub.inputs) {
    const graph::TensorDesc& desc = p.tensors[*p.findTensor(in.irName)];
    std::vector<double> given = in.buffer == "q" ? q : in.buffer == "k" ? k : bias;
    if (in.buffer == "bias") {
      EXPECT_EQ(in.tiling.dimFromEnd, 3);
      ASSERT_EQ(in.tiling.times, b);
      EXPECT_EQ(desc.shape, (graph::Dims{b * h, s, t}));
      given.insert(given.end(), bias.begin(), bias.end());  // b = 2 copies
    } else {
      EXPECT_EQ(in.tiling.times, 1) << in.buffer;
      EXPECT_EQ(desc.shape[0], b * h) << in.buffer;
    }
    inputs[desc.name] = {desc.shape, given};
  }
  ASSERT_EQ(inputs.size(), 3u);
  const std::vector<double> got = verify::evaluate(p, inputs).at(p.tensors[p.outputs[0]].name).data;
  ASSERT_EQ(got.size(), static_cast<size_t>(b * h * s * t));
  for (int64_t m0 = 0; m0 < b * h; ++m0) {
    for (int64_t i = 0; i < s; ++i) {
      std::vector<double> row(t);
      double sum = 0;
      for (int64_t j = 0; j < t; ++j) {
        double dot = bias[((m0 % h) * s + i) * t + j];
        for (int64_t x = 0; x < d; ++x) dot += q[(m0 * s + i) * d + x] * k[(m0 * d + x) * t + j];
        row[j] = std::exp(dot);
        sum += row[j];
      }
      for (int64_t j = 0; j < t; ++j) {
        EXPECT_NEAR(got[(m0 * s + i) * t + j], row[j] / sum, 1e-9) << m0 << " " << i << " " << j;
      }
    }
  }
}

// A batch of one is rows already: the same one subgraph, shapes as before.
TEST(RowMerge, AtBatchOneNothingChanges) {
  RowGraphJson g;
  g.value("x", {1, kSeq, kHidden});
  g.value("w", {kHidden, kWide});
  g.constant("rows", {kSeq, kHidden}, "int64");
  g.node("Exp", {"x"}, "e", {1, kSeq, kHidden});
  g.node("Reshape", {"e", "rows"}, "flat", {kSeq, kHidden});
  g.node("MatMul", {"flat", "w"}, "y", {kSeq, kWide});
  const ImportedModel m = partitionModel(g.model({"x", "w"}, {"y"}));
  ASSERT_EQ(m.subgraphs.size(), 1u);
  const graph::Program& p = m.subgraphs[0].program;
  EXPECT_EQ(p.tensors[p.outputs[0]].shape, (graph::Dims{kSeq, kWide}));
}

}  // namespace
}  // namespace mugraph::onnx_import
