// ONNX symbolic dims (dim_param) become dynamic dims of the imported programs (issue 28): one
// program dim per name, its range [1, 65536] or the --dim-range given, every shape at the
// range's max; --dim pins a name to a static size and takes precedence.
#include <gtest/gtest.h>

#include <set>

#include "graph/dynamic_dims.h"
#include "graph/error.h"
#include "onnx_import/graph_json.h"
#include "onnx_import/import_model.h"
#include "onnx_import/onnx_graph.h"
#include "onnx_import/partition_json.h"

namespace mugraph::onnx_import {
namespace {

// Y = (A + B) · W with A, B [seq, 64]; `bName` names B's first dim.
OnnxGraph addThenMatmul(const std::string& bName) {
  OnnxGraph g;
  g.symbolicInput("A", {"seq", "64"});
  g.symbolicInput("B", {bName, "64"});
  g.input("W", {64, 32});
  g.symbolicOutput("Y", {"seq", "32"});
  g.node("Add", {"A", "B"}, "S");
  g.node("MatMul", {"S", "W"}, "Y");
  return g;
}

TEST(OnnxDynamicDims, TheSameNameIsTheSameProgramDim) {
  const ImportedModel m = addThenMatmul("seq").import("dynamic_same_name");
  ASSERT_EQ(m.subgraphs.size(), 1u);
  const graph::Program& p = m.subgraphs[0].program;
  ASSERT_EQ(p.dims.size(), 1u);
  EXPECT_EQ(p.dims[0], (graph::DynamicDim{"seq", 1, 65536}));
  for (graph::TensorId in : p.inputs) {
    const graph::TensorDesc& t = p.tensors[in];
    if (t.name == "W") {
      EXPECT_TRUE(t.dynamicDims.empty() || graph::dynamicDimOf(t, 0) == graph::kStaticDim)
          << t.name;
      continue;
    }
    EXPECT_EQ(t.shape, (graph::Dims{65536, 64})) << t.name;
    EXPECT_EQ(graph::dynamicDimOf(t, 0), 0) << t.name;
  }
  const graph::TensorDesc& y = p.tensors[p.outputs.at(0)];
  EXPECT_EQ(graph::dynamicDimOf(y, 0), 0);
  // The program runs at any length of the range.
  const graph::KernelGraph at100 = graph::instantiate(p, {{"seq", 100}});
  EXPECT_EQ(at100.tensors[at100.outputs.at(0)].shape, (graph::Dims{100, 32}));
}

TEST(OnnxDynamicDims, ARangeOverridesTheDefaultAndAPinWins) {
  OnnxGraph g = addThenMatmul("seq");
  const graph::Program ranged =
      g.import("dynamic_ranged", {}, {{"seq", DimRange{8, 8192}}}).subgraphs.at(0).program;
  EXPECT_EQ(ranged.dims.at(0), (graph::DynamicDim{"seq", 8, 8192}));
  EXPECT_EQ(ranged.tensors[ranged.inputs.at(0)].shape, (graph::Dims{8192, 64}));
  const graph::Program pinned =
      g.import("dynamic_pinned", {{"seq", 100}}, {{"seq", DimRange{8, 8192}}})
          .subgraphs.at(0)
          .program;
  EXPECT_TRUE(pinned.dims.empty());
  EXPECT_EQ(pinned.tensors[pinned.inputs.at(0)].shape, (graph::Dims{100, 64}));
}

TEST(OnnxDynamicDims, ARangeNamingNoDimOrABadRangeIsOneClearError) {
  OnnxGraph g = addThenMatmul("seq");
  try {
    g.import("dynamic_bad_range", {}, {{"batch", DimRange{1, 8}}});
    FAIL() << "a range naming no dim was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'batch' names no dynamic dim"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parseDimRange("seq=8:4"), UserError);
  EXPECT_THROW(parseDimRange("seq=8"), UserError);
  EXPECT_THROW(parseDimRange("seq=0:8"), UserError);
  const auto [name, range] = parseDimRange("seq=1:8192");
  EXPECT_EQ(name, "seq");
  EXPECT_EQ(range.min, 1);
  EXPECT_EQ(range.max, 8192);
}

TEST(OnnxDynamicDims, TwoNamesAreTwoDims) {
  OnnxGraph g;
  g.symbolicInput("A", {"seq", "64"});
  g.symbolicInput("C", {"kv", "64"});
  g.input("W", {64, 32});
  g.symbolicOutput("Y", {"seq", "32"});
  g.symbolicOutput("Z", {"kv", "32"});
  g.node("MatMul", {"A", "W"}, "Y");
  g.node("MatMul", {"C", "W"}, "Z");
  const ImportedModel m = g.import("dynamic_two_names");
  std::set<std::string> names;
  for (const Subgraph& s : m.subgraphs) {
    for (const graph::DynamicDim& d : s.program.dims) names.insert(d.name);
  }
  EXPECT_EQ(names, (std::set<std::string>{"kv", "seq"}));
}

// The PyTorch front end's graph JSON names dynamic dims in shapes, declared in $.dims with
// their ranges: the same programs as an ONNX file's dim_param gives.
nlohmann::json addThenMatmulJson(const nlohmann::json& bShape, const nlohmann::json& dims) {
  return {{"format", "mugraph.graph"},
          {"version", 1},
          {"dims", dims},
          {"values",
           {{{"name", "A"}, {"type", "float16"}, {"shape", {"seq", 64}}},
            {{"name", "B"}, {"type", "float16"}, {"shape", bShape}},
            {{"name", "W"}, {"type", "float16"}, {"shape", {64, 32}}},
            {{"name", "S"}, {"type", "float16"}, {"shape", {"seq", 64}}},
            {{"name", "Y"}, {"type", "float16"}, {"shape", {"seq", 32}}}}},
          {"inputs", {"A", "B", "W"}},
          {"outputs", {"Y"}},
          {"nodes",
           {{{"name", "add"}, {"op", "Add"}, {"inputs", {"A", "B"}}, {"outputs", {"S"}}},
            {{"name", "mm"}, {"op", "MatMul"}, {"inputs", {"S", "W"}}, {"outputs", {"Y"}}}}}};
}

TEST(GraphJsonDynamicDims, ANamedDimIsADynamicDimOfTheProgram) {
  const nlohmann::json dims = {{{"name", "seq"}, {"min", 2}, {"max", 4096}}};
  const ImportedModel m =
      partitionModel(modelFromGraphJson(addThenMatmulJson({"seq", 64}, dims), "fx.json"));
  ASSERT_EQ(m.subgraphs.size(), 1u);
  const graph::Program& p = m.subgraphs[0].program;
  ASSERT_EQ(p.dims.size(), 1u);
  EXPECT_EQ(p.dims[0], (graph::DynamicDim{"seq", 2, 4096}));
  const graph::TensorDesc& y = p.tensors[p.outputs.at(0)];
  EXPECT_EQ(y.shape, (graph::Dims{4096, 32}));
  EXPECT_EQ(graph::dynamicDimOf(y, 0), 0);
  const graph::KernelGraph at7 = graph::instantiate(p, {{"seq", 7}});
  EXPECT_EQ(at7.tensors[at7.outputs.at(0)].shape, (graph::Dims{7, 32}));
  // The canonical text names dims by position: layers whose caches have lengths of other
  // names share one search.
  const std::string canonical = subgraphJson(m.subgraphs[0]).at("canonical_program_text");
  EXPECT_NE(canonical.find("dim n0 in [2, 4096]"), std::string::npos) << canonical;
  EXPECT_EQ(canonical.find("seq"), std::string::npos) << canonical;
}

TEST(GraphJsonDynamicDims, AnUndeclaredNameOrABadRangeNamesItsJsonPath) {
  const nlohmann::json dims = {{{"name", "seq"}, {"min", 2}, {"max", 4096}}};
  try {
    modelFromGraphJson(addThenMatmulJson({"kv", 64}, dims), "fx.json");
    FAIL() << "an undeclared dim name was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("$.values[1].shape[0]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'kv'"), std::string::npos) << e.what();
  }
  const nlohmann::json reversed = {{{"name", "seq"}, {"min", 4096}, {"max", 2}}};
  try {
    modelFromGraphJson(addThenMatmulJson({"seq", 64}, reversed), "fx.json");
    FAIL() << "a range with min > max was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("$.dims[0]"), std::string::npos) << e.what();
  }
}

// Reshapes of values with a dynamic dim (PyTorch's views under dynamic shapes, the length
// written -1): [1, seq, 64] to [seq, 64] relabels at every length, so exp and the matmul are
// one subgraph; [seq, 64] to [64, seq] with seq's reference extent 64 has the same extents
// but moves every element at another length, so it is no alias.
nlohmann::json reshapedJson(const nlohmann::json& reshaped) {
  const nlohmann::json v = [&] {
    nlohmann::json values = {{{"name", "A"}, {"type", "float16"}, {"shape", {1, "seq", 64}}},
                             {{"name", "E"}, {"type", "float16"}, {"shape", {1, "seq", 64}}},
                             {{"name", "R"}, {"type", "float16"}, {"shape", reshaped}},
                             {{"name", "to"}, {"type", "int64"}, {"shape", {2}}},
                             {{"name", "W"}, {"type", "float16"}, {"shape", {64, 32}}},
                             {{"name", "Y"}, {"type", "float16"}, {"shape", nullptr}}};
    values[5]["shape"] = {reshaped[0], 32};
    return values;
  }();
  return {{"format", "mugraph.graph"},
          {"version", 1},
          {"dims", {{{"name", "seq"}, {"min", 1}, {"max", 64}}}},
          {"values", v},
          {"constants", {{{"name", "to"}, {"values", {-1, 64}}}}},
          {"inputs", {"A", "W"}},
          {"outputs", {"Y"}},
          {"nodes",
           {{{"name", "exp"}, {"op", "Exp"}, {"inputs", {"A"}}, {"outputs", {"E"}}},
            {{"name", "view"}, {"op", "Reshape"}, {"inputs", {"E", "to"}}, {"outputs", {"R"}}},
            {{"name", "mm"}, {"op", "MatMul"}, {"inputs", {"R", "W"}}, {"outputs", {"Y"}}}}}};
}

TEST(GraphJsonDynamicDims, AReshapeRelabelsOnlyWhereEveryDynamicDimKeepsItsPlace) {
  const ImportedModel kept =
      partitionModel(modelFromGraphJson(reshapedJson({"seq", 64}), "fx.json"));
  ASSERT_EQ(kept.subgraphs.size(), 1u);
  EXPECT_EQ(kept.subgraphs[0].nodes.size(), 3u);
  const graph::Program& p = kept.subgraphs[0].program;
  ASSERT_EQ(p.dims.size(), 1u);
  EXPECT_EQ(graph::dynamicDimOf(p.tensors[p.outputs.at(0)], 0), 0);

  const ImportedModel moved =
      partitionModel(modelFromGraphJson(reshapedJson({64, "seq"}), "fx.json"));
  for (const Subgraph& s : moved.subgraphs) {
    EXPECT_FALSE(std::count(s.nodes.begin(), s.nodes.end(), "exp") &&
                 std::count(s.nodes.begin(), s.nodes.end(), "mm"))
        << "the reshape moving the dynamic dim read as an alias";
  }
}

}  // namespace
}  // namespace mugraph::onnx_import
