// Bad and unsupported models: a truncated file, a dynamic dim (and its pin), an op with no
// mapping, opsets out of range. Each is a UserError with one clear reason, or a partition
// that leaves the bad part out. Small models are built here with libonnx's protobuf classes.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "graph/display_text.h"
#include "graph/error.h"
#include "onnx_import/import_model.h"
#include "tests/onnx_import/exported_models.h"
#include "tools/run_cli.h"

namespace mugraph::onnx_import {
namespace {

std::string scratch(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mugraph_onnx_tests";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

void addTensor(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
               const std::string& name, std::vector<int64_t> dims) {
  onnx::ValueInfoProto* v = list->Add();
  v->set_name(name);
  onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto_DataType_FLOAT16);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

void addNode(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
             const std::string& out) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + out);
  for (const std::string& i : in) n->add_input(i);
  n->add_output(out);
}

// Y = exp(Op(X · W)): MatMul, then an op (one with no mapping), then Exp.
std::string writeModel(const std::string& name, int64_t opset, const std::string& middleOp) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  addTensor(g->mutable_input(), "X", {16, 64});
  addTensor(g->mutable_input(), "W", {64, 32});
  addTensor(g->mutable_output(), "Y", {16, 32});
  addNode(g, "MatMul", {"X", "W"}, "A");
  addNode(g, middleOp, {"A"}, "B");
  addNode(g, "Exp", {"B"}, "Y");
  const std::string path = scratch(name + ".onnx");
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return path;
}

std::string errorOf(const std::string& path, const DimPins& pins = {}) {
  try {
    importModel(path, pins);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(MalformedModels, TruncatedProtobufIsOneClearError) {
  std::ifstream in(exportedModel("llama_mlp"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  for (size_t keep : {bytes.size() / 2, size_t{100}, size_t{7}}) {
    const std::string path = scratch("truncated.onnx");
    std::ofstream(path, std::ios::binary) << bytes.substr(0, keep);
    const std::string error = errorOf(path);
    EXPECT_NE(error.find(path), std::string::npos) << error;
    EXPECT_TRUE(error.find("does not parse") != std::string::npos ||
                error.find("no graph") != std::string::npos)
        << keep << " bytes: " << error;
  }
  EXPECT_NE(errorOf(scratch("missing.onnx")).find("no such file"), std::string::npos);
}

// A symbolic dim is a dynamic dim of the program (its reference extent the range's max)
// until --dim pins it to a static size.
TEST(MalformedModels, DynamicDimIsAProgramDimUntilPinned) {
  for (const char* name : {"llama_mlp_dynamic_seq", "llama_mlp_dynamic_seq_legacy"}) {
    const ImportedModel dynamic = importModel(exportedModel(name), {});
    ASSERT_EQ(dynamic.subgraphs.size(), 1u);
    const graph::Program& d = dynamic.subgraphs[0].program;
    ASSERT_EQ(d.dims.size(), 1u);
    // The exporters name the dim differently ("seq", "s0").
    const std::string dim = d.dims[0].name;
    EXPECT_EQ(d.dims[0].min, 1);
    EXPECT_EQ(d.dims[0].max, 65536);
    EXPECT_EQ(d.tensors[d.inputs[0]].shape, (graph::Dims{65536, 128}));
    EXPECT_EQ(d.tensors[d.inputs[0]].dynamicDims, (std::vector<int>{0, graph::kStaticDim}));
    const ImportedModel ranged = importModel(exportedModel(name), {}, {{dim, DimRange{16, 512}}});
    const graph::Program& r = ranged.subgraphs[0].program;
    EXPECT_EQ(r.dims.at(0).min, 16);
    EXPECT_EQ(r.tensors[r.inputs[0]].shape, (graph::Dims{512, 128}));
    // A pin takes precedence over a range.
    const ImportedModel m =
        importModel(exportedModel(name), {{dim, 40}}, {{dim, DimRange{16, 512}}});
    ASSERT_EQ(m.subgraphs.size(), 1u);
    const graph::Program& p = m.subgraphs[0].program;
    EXPECT_TRUE(p.dims.empty());
    EXPECT_EQ(p.tensors[p.inputs[0]].shape, (graph::Dims{40, 128}));
    EXPECT_NE(errorOf(exportedModel(name), {{dim, 40}, {"batch", 2}})
                  .find("'batch' names no dynamic dim"),
              std::string::npos);
  }
}

TEST(MalformedModels, OpWithNoMappingIsLeftOutBetweenTwoSubgraphs) {
  const ImportedModel m = importModel(writeModel("log", 17, "Log"), {});
  ASSERT_EQ(m.unsupported.size(), 1u);
  EXPECT_EQ(m.unsupported[0].op, "Log");
  EXPECT_EQ(m.unsupported[0].reason, "no mapping for ONNX op 'Log'");
  ASSERT_EQ(m.subgraphs.size(), 2u);
  EXPECT_EQ(m.subgraphs[0].ops, std::vector<std::string>{"MatMul"});
  EXPECT_EQ(m.subgraphs[1].ops, std::vector<std::string>{"Exp"});
  // With a mapped op in the middle the whole graph is one subgraph.
  EXPECT_EQ(importModel(writeModel("sigmoid", 17, "Sigmoid"), {}).subgraphs.size(), 1u);
}

TEST(MalformedModels, OpsetOutOfRangeIsOneClearError) {
  for (int64_t opset : {11, 12, 22}) {
    const std::string error = errorOf(writeModel("opset", opset, "Sigmoid"));
    EXPECT_NE(error.find("opset " + std::to_string(opset)), std::string::npos) << error;
    EXPECT_NE(error.find("13 to 21"), std::string::npos) << error;
  }
  for (int64_t opset : {13, 21}) EXPECT_EQ(errorOf(writeModel("opset", opset, "Sigmoid")), "");
}

TEST(MalformedModels, NodeReadingAnUndefinedValueIsOneClearError) {
  onnx::ModelProto m;
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  addTensor(g->mutable_input(), "X", {4, 4});
  addTensor(g->mutable_output(), "Y", {4, 4});
  addNode(g, "Exp", {"Z"}, "Y");
  const std::string path = scratch("undefined.onnx");
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  EXPECT_NE(errorOf(path).find("reads 'Z'"), std::string::npos) << errorOf(path);
}

// Names are data: a node name, a value name or an op type that is not UTF-8 text (the mutated
// exports of issue 31, whose summary could not be written after the whole search) is refused
// when the model is read, with the bytes escaped in the message.
TEST(MalformedModels, NamesThatAreNotTextAreRefusedWithTheBadBytesEscaped) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"rmsnorm_bad_node_name", "node 1 name 'node_pow_\\xff'"},
      {"rmsnorm_bad_value_name", "value name 'hidden_\\xc3('"},
      {"rmsnorm_bad_op_type", "node 5 op type 'Recipr\\x1b\\xffal'"},
  };
  for (const auto& [name, expected] : cases) {
    try {
      importModel(exportedModel(name), {});
      ADD_FAILURE() << name << " was imported";
    } catch (const UserError& e) {
      const std::string message = e.what();
      EXPECT_TRUE(graph::isValidUtf8(message)) << graph::escapeForDisplay(message);
      EXPECT_NE(message.find(expected), std::string::npos) << message;
      EXPECT_NE(message.find("is not text"), std::string::npos) << message;
    }
  }
}

// What a user sees: exit 2 and one line naming the file for a model that cannot be read; a
// model with an op that has no mapping imports, and its summary names the node.
TEST(MalformedModels, CliExitsTwoWithOneLineOrListsTheNodeLeftOut) {
  const std::string dir = scratch("cli");
  std::filesystem::create_directories(dir);
  const std::string opset = writeModel("cli_opset", 12, "Sigmoid");
  testing::CliResult r = testing::runMugraph("superoptimize '" + opset + "' --time-limit 1", dir);
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_EQ(r.err,
            "mugraph: error: " + opset +
                ": opset 12 of the default domain is out of range (13 to 21 are supported)\n");
  r = testing::runMugraph(
      "superoptimize '" + writeModel("cli_log", 17, "Log") + "' --time-limit 2 --json", dir);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  ASSERT_EQ(summary["unsupported"].size(), 1u);
  EXPECT_EQ(summary["unsupported"][0]["node"], "Log_B");
  EXPECT_EQ(summary["unsupported"][0]["op"], "Log");
  EXPECT_EQ(summary["subgraphs"].size(), 2u);
  for (const nlohmann::json& s : summary["subgraphs"]) EXPECT_GE(s["verified"].get<int>(), 1);
}

// ONNX graphs are SSA: a node writing a value an earlier node (or an input) defines would let
// the earlier node read a later one's result, a cycle the partition never finishes on (a
// fuzzer find). One clear error naming the node and the value, before the partition.
TEST(MalformedModels, AValueWrittenTwiceIsOneClearError) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  addTensor(g->mutable_input(), "X", {16, 64});
  addTensor(g->mutable_input(), "W", {64, 32});
  addTensor(g->mutable_output(), "Y", {16, 32});
  addNode(g, "MatMul", {"X", "W"}, "A");
  addNode(g, "Exp", {"A"}, "B");
  addNode(g, "Sqrt", {"B"}, "A");  // writes A again: MatMul -> Exp -> Sqrt -> Exp ...
  addNode(g, "Exp", {"A"}, "Y");
  const std::string path = scratch("written_twice.onnx");
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  const std::string error = errorOf(path);
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("node 'Sqrt_A' (Sqrt) writes 'A'"), std::string::npos) << error;
  EXPECT_NE(error.find("already defines"), std::string::npos) << error;
}

}  // namespace
}  // namespace mugraph::onnx_import
