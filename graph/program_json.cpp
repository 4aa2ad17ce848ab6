// Program JSON ("mugraph.program", version 1): the writer and the checked reader. A program
// read from JSON has canonical tensor ids: its inputs in order, then each op's output in op
// order, which is also the order GraphBuilder gives a program whose inputs come first.
#include <algorithm>
#include <map>

#include "graph/builder.h"
#include "graph/error.h"
#include "graph/hash.h"
#include "graph/json_format.h"
#include "graph/json_reader.h"
#include "graph/shape_inference.h"
#include "graph/validate.h"

namespace mugraph::graph {
namespace {

using nlohmann::json;

// Where each name is defined in the file, so that a use can tell "unknown" from "too early".
std::map<std::string, std::string> definitionSites(const JsonReader& top) {
  std::map<std::string, std::string> sites;
  auto note = [&](const JsonReader& item, const char* key) {
    const json& value = item.value();
    if (!value.is_object() || !value.contains(key) || !value[key].is_string()) return;
    sites.emplace(value[key].get<std::string>(), item.path());
  };
  for (const JsonReader& item : top.at("inputs").items()) note(item, "name");
  for (const JsonReader& item : top.at("ops").items()) note(item, "output");
  return sites;
}

TensorId readUse(const JsonReader& use, const GraphBuilder& builder,
                 const std::map<std::string, std::string>& sites) {
  const std::string name = use.tensorName();
  if (std::optional<TensorId> id = builder.graph().findTensor(name)) return *id;
  auto site = sites.find(name);
  if (site != sites.end()) {
    use.fail("tensor '" + name + "' is used before it is defined at " + site->second +
             " (forward reference or cycle)");
  }
  use.fail("unknown tensor '" + name + "'");
}

std::string checkNewName(const JsonReader& field, const GraphBuilder& builder) {
  const std::string name = field.tensorName();
  if (builder.graph().findTensor(name)) field.fail("duplicate tensor name '" + name + "'");
  return name;
}

void readOp(const JsonReader& item, GraphBuilder& builder,
            const std::map<std::string, std::string>& sites) {
  const OpKind kind = readOpKind(item, OpLevel::Program);
  std::vector<std::string_view> keys{"op", "inputs", "output"};
  for (std::string_view key : attrKeys(kind)) keys.push_back(key);
  OpAttrs attrs = readAttrs(item, kind);
  item.expectObject(keys);
  const JsonReader inputs = item.at("inputs");
  std::vector<TensorId> operands;
  for (const JsonReader& use : inputs.items()) operands.push_back(readUse(use, builder, sites));
  const int arity = opInfo(kind).arity;
  if (static_cast<int>(operands.size()) != arity) {
    inputs.fail("op '" + std::string(opName(kind)) + "' takes " + std::to_string(arity) +
                " operand(s), got " + std::to_string(operands.size()));
  }
  const std::string output = checkNewName(item.at("output"), builder);
  try {
    builder.op(kind, std::move(operands), attrs, output);
  } catch (const ShapeError& e) {
    item.fail(e.what());
  }
}

// Turns a validation error into the JSON path of the statement it is about.
[[noreturn]] void failAtLocation(const JsonReader& top, const Program& program,
                                 const IrError& error) {
  IrLocation where = error.location();
  std::string section = where.section;
  if (section == "tensors" && where.index >= 0) {
    // Programs list no tensors: point at the input or op that defines the tensor.
    const TensorId tensor = where.index;
    for (size_t i = 0; i < program.inputs.size(); ++i) {
      if (program.inputs[i] == tensor) {
        section = "inputs";
        where.index = static_cast<int>(i);
      }
    }
    for (size_t k = 0; k < program.ops.size(); ++k) {
      for (TensorId t : program.ops[k].outputs) {
        if (t != tensor) continue;
        section = "ops";
        where.index = static_cast<int>(k);
        where.field = "output";
      }
    }
  }
  if (section == "ops" && where.field == "outputs") where.field = "output";
  throw UserError(top.source() + ": " + jsonPathOf(top.path(), section, where), error.what());
}

}  // namespace

nlohmann::json programToJson(const Program& program) {
  json inputs = json::array();
  for (TensorId t : program.inputs) {
    inputs.push_back(tensorDescToJson(program.tensors[t], program.dims));
  }
  json ops = json::array();
  for (const KernelOp& op : program.ops) {
    json item{{"op", opName(op.kind)}, {"inputs", json::array()}};
    for (TensorId t : op.inputs) item["inputs"].push_back(program.tensors[t].name);
    item["output"] = program.tensors[op.outputs.at(0)].name;
    writeAttrs(item, op.kind, op.attrs);
    ops.push_back(std::move(item));
  }
  // An output stored other than row-major is {"name", "layout"}; every other one its name.
  json outputs = json::array();
  for (TensorId t : program.outputs) {
    const TensorDesc& desc = program.tensors[t];
    const bool computed =
        std::find(program.inputs.begin(), program.inputs.end(), t) == program.inputs.end();
    if (computed && desc.layout != Layout::RowMajor) {
      outputs.push_back({{"name", desc.name}, {"layout", layoutName(desc.layout)}});
    } else {
      outputs.push_back(desc.name);
    }
  }
  json result{{"format", kProgramFormat},
              {"version", kFormatVersion},
              {"name", program.name},
              {"inputs", std::move(inputs)},
              {"ops", std::move(ops)},
              {"outputs", std::move(outputs)},
              {"hash", hashHex(programHash(program))}};
  if (!program.dims.empty()) result["dims"] = dynamicDimsToJson(program.dims);
  return result;
}

Program programFromJson(const nlohmann::json& json, const std::string& sourceName,
                        const std::string& path) {
  const JsonReader top(json, sourceName, path);
  top.checkFormatAndVersion(kProgramFormat, "program");
  top.expectObject({"format", "version", "name", "dims", "inputs", "ops", "outputs", "hash"});
  const std::optional<JsonReader> name = top.find("name");
  GraphBuilder builder(name ? name->graphName() : "");
  const std::map<std::string, std::string> sites = definitionSites(top);
  if (std::optional<JsonReader> dims = top.find("dims")) {
    const std::vector<JsonReader> items = dims->items();
    const std::vector<DynamicDim> declared = readDynamicDims(*dims);
    for (size_t i = 0; i < declared.size(); ++i) {
      auto site = sites.find(declared[i].name);
      if (site != sites.end()) {
        items[i].at("name").fail("dim '" + declared[i].name + "' has the name of the tensor at " +
                                 site->second);
      }
      builder.dim(declared[i]);
    }
  }
  for (const JsonReader& item : top.at("inputs").items()) {
    const TensorDesc desc = readTensorDesc(item, builder.graph().dims);
    checkNewName(item.at("name"), builder);
    builder.input(desc.name, desc.dtype, desc.shape, desc.layout, desc.dynamicDims);
  }
  for (const JsonReader& item : top.at("ops").items()) readOp(item, builder, sites);
  const JsonReader outputs = top.at("outputs");
  for (const JsonReader& use : outputs.items()) {
    if (!use.value().is_object()) {
      builder.output(readUse(use, builder, sites));
      continue;
    }
    use.expectObject({"name", "layout"});
    const TensorId id = readUse(use.at("name"), builder, sites);
    const JsonReader layoutField = use.at("layout");
    const std::optional<Layout> layout = parseLayout(layoutField.string());
    if (!layout || *layout == Layout::Transposed) {
      layoutField.fail("an output is stored row_major or heads_transposed");
    }
    if (*layout != Layout::RowMajor &&
        std::find(builder.graph().inputs.begin(), builder.graph().inputs.end(), id) !=
            builder.graph().inputs.end()) {
      layoutField.fail("input '" + builder.desc(id).name + "' is output as it is stored");
    }
    builder.output(id, *layout);
  }
  Program program = builder.graph();
  try {
    validateProgram(program);
  } catch (const IrError& e) {
    failAtLocation(top, program, e);
  }
  top.checkHash(programHash(program));
  return program;
}

}  // namespace mugraph::graph
