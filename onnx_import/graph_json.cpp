#include "onnx_import/graph_json.h"

#include <algorithm>
#include <set>

#include "graph/dynamic_dims.h"
#include "graph/error.h"
#include "graph/json_reader.h"

namespace mugraph::onnx_import {
namespace {

using graph::JsonReader;

std::optional<graph::DType> floatDtype(const std::string& elemType) {
  if (elemType == "float16") return graph::DType::F16;
  if (elemType == "bfloat16") return graph::DType::BF16;
  if (elemType == "float") return graph::DType::F32;
  return std::nullopt;
}

// ONNX's element type names, lower case, as Value::elemType holds them.
const std::set<std::string>& elemTypes() {
  static const std::set<std::string> names{
      "float16",   "bfloat16",   "float",        "double",     "int8",        "int16", "int32",
      "int64",     "uint8",      "uint16",       "uint32",     "uint64",      "bool",  "string",
      "complex64", "complex128", "float8e4m3fn", "float8e5m2", "not a tensor"};
  return names;
}

std::string readName(const JsonReader& r) {
  const std::string name = r.string();
  if (name.empty()) r.fail("a value or node name is empty");
  return name;
}

// $.dims: the dynamic dims a shape may name, each with its range (graph/dynamic_dims.h).
std::vector<graph::DynamicDim> readDims(const JsonReader& root) {
  std::vector<graph::DynamicDim> dims;
  std::optional<JsonReader> list = root.find("dims");
  if (!list) return dims;
  for (const JsonReader& r : list->items()) {
    r.expectObject({"name", "min", "max"});
    const graph::DynamicDim d{r.at("name").string(), r.at("min").integer(1, int64_t{1} << 40),
                              r.at("max").integer(1, int64_t{1} << 40)};
    if (auto problem = graph::dimDeclarationProblem(d.name, d.min, d.max, dims)) {
      r.at(problem->field).fail(problem->reason);
    }
    dims.push_back(d);
  }
  return dims;
}

// A shape's dims are sizes, or names of $.dims: a dynamic dim, at its range's max (the
// reference extent, as an ONNX dim_param is).
Value readValue(const JsonReader& r, const std::vector<graph::DynamicDim>& declared) {
  r.expectObject({"name", "type", "shape", "why_no_shape", "layout", "dense"});
  Value v;
  v.name = readName(r.at("name"));
  v.elemType = r.at("type").string();
  if (!elemTypes().count(v.elemType)) {
    r.at("type").fail("'" + v.elemType + "' is not an ONNX element type name");
  }
  v.dtype = floatDtype(v.elemType);
  if (std::optional<JsonReader> shape = r.find("shape"); shape && !shape->value().is_null()) {
    graph::Dims dims;
    std::vector<std::string> dynamic;
    for (const JsonReader& d : shape->items()) {
      dynamic.emplace_back();
      if (!d.value().is_string()) {
        dims.push_back(d.integer(1, int64_t{1} << 40));
        continue;
      }
      const std::string name = d.string();
      const auto dim = std::find_if(declared.begin(), declared.end(),
                                    [&](const graph::DynamicDim& x) { return x.name == name; });
      if (dim == declared.end()) d.fail("'" + name + "' is a size or a dim of $.dims");
      dims.push_back(dim->max);
      dynamic.back() = name;
    }
    if (std::any_of(dynamic.begin(), dynamic.end(), [](const auto& n) { return !n.empty(); })) {
      v.dynamicDims = std::move(dynamic);
    }
    v.shape = dims;
  } else {
    v.whyNoShape = r.has("why_no_shape") ? r.at("why_no_shape").string() : "its shape is unknown";
  }
  if (std::optional<JsonReader> layout = r.find("layout")) {
    const std::optional<graph::Layout> parsed = graph::parseLayout(layout->string());
    if (!parsed || *parsed == graph::Layout::Transposed) {
      layout->fail("a value is stored row_major or heads_transposed");
    }
    const int rank = v.shape ? static_cast<int>(v.shape->size()) : 0;
    if (*parsed == graph::Layout::HeadsTransposed &&
        rank < graph::swappedDimsFromEnd(*parsed).first) {
      layout->fail("a heads_transposed value has rank 3 or more");
    }
    v.storedLayout = *parsed;
  }
  if (std::optional<JsonReader> dense = r.find("dense")) v.dense = dense->boolean();
  return v;
}

Attribute readAttribute(const JsonReader& r) {
  Attribute a;
  const nlohmann::json& j = r.value();
  if (j.is_number_integer()) {
    a.i = r.integer(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  } else if (j.is_number()) {
    a.f = r.number();
  } else if (j.is_string()) {
    a.s = r.string();
  } else if (j.is_array()) {
    for (const JsonReader& e : r.items()) {
      a.ints.push_back(
          e.integer(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
    }
  } else {
    r.fail("an attribute is an integer, a number, a string or an array of integers");
  }
  return a;
}

Node readNode(const JsonReader& r, const std::set<std::string>& defined) {
  r.expectObject({"name", "op", "inputs", "outputs", "attributes"});
  Node node;
  node.name = readName(r.at("name"));
  node.op = r.at("op").string();
  for (const JsonReader& in : r.at("inputs").items()) {
    node.inputs.push_back(in.string());
    if (!node.inputs.back().empty() && !defined.count(node.inputs.back())) {
      in.fail("node '" + node.name + "' (" + node.op + ") reads '" + node.inputs.back() +
              "', which no input, constant or earlier node defines");
    }
  }
  for (const JsonReader& out : r.at("outputs").items()) node.outputs.push_back(readName(out));
  if (node.outputs.empty()) r.at("outputs").fail("a node has at least one output");
  if (std::optional<JsonReader> attrs = r.find("attributes")) {
    if (!attrs->value().is_object()) attrs->fail("attributes are an object");
    for (const auto& [key, value] : attrs->value().items()) {
      node.attributes[key] = readAttribute(attrs->at(key));
    }
  }
  return node;
}

}  // namespace

Model modelFromGraphJson(const nlohmann::json& json, const std::string& source) {
  const JsonReader root(json, source, "$");
  root.expectObject(
      {"format", "version", "name", "opset", "dims", "values", "inputs", "outputs", "constants",
       "nodes"});
  if (root.at("format").string() != kGraphFormat) {
    root.at("format").fail(std::string("expected \"") + kGraphFormat + "\"");
  }
  root.at("version").integer(kGraphVersion, kGraphVersion);
  Model model;
  model.path = source;
  model.graphName = root.has("name") ? root.at("name").string() : "graph";
  model.opset = root.has("opset") ? root.at("opset").integer(kMinOpset, kMaxOpset) : kMaxOpset;
  model.dims = readDims(root);
  for (const JsonReader& r : root.at("values").items()) {
    Value v = readValue(r, model.dims);
    if (model.values.count(v.name)) r.at("name").fail("'" + v.name + "' is described twice");
    model.values[v.name] = std::move(v);
  }
  auto describedValue = [&](const JsonReader& r) -> Value& {
    const std::string name = readName(r);
    if (!model.values.count(name)) r.fail("'" + name + "' is not among $.values");
    return model.values.at(name);
  };
  std::set<std::string> defined;
  for (const JsonReader& r : root.at("inputs").items()) {
    Value& v = describedValue(r);
    if (!v.shape) r.fail("input '" + v.name + "' has no static shape: " + v.whyNoShape);
    v.graphInput = true;
    model.graphInputs.push_back(v.name);
    defined.insert(v.name);
  }
  if (std::optional<JsonReader> constants = root.find("constants")) {
    for (const JsonReader& r : constants->items()) {
      r.expectObject({"name", "values"});
      Value& v = describedValue(r.at("name"));
      if (!v.shape) r.at("name").fail("constant '" + v.name + "' has no static shape");
      Constant c;
      c.shape = *v.shape;
      for (const JsonReader& x : r.at("values").items()) c.values.push_back(x.number());
      if (static_cast<int64_t>(c.values.size()) != graph::elementCount(c.shape)) {
        r.at("values").fail("holds " + std::to_string(c.values.size()) + " values; its shape has " +
                            std::to_string(graph::elementCount(c.shape)));
      }
      v.initializer = true;
      model.constants[v.name] = std::move(c);
      defined.insert(v.name);
    }
  }
  for (const JsonReader& r : root.at("nodes").items()) {
    Node node = readNode(r, defined);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string& out = node.outputs[i];
      if (defined.count(out)) {
        r.at("outputs").fail("'" + out + "' is defined twice");
      }
      defined.insert(out);
      model.producers[out] = static_cast<int>(model.nodes.size());
      if (!model.values.count(out)) {
        model.values[out] =
            Value{out, "", std::nullopt, std::nullopt, "its shape is unknown", false, false, {}};
      }
    }
    model.nodes.push_back(std::move(node));
  }
  for (const JsonReader& r : root.at("outputs").items()) {
    const std::string name = readName(r);
    if (!defined.count(name)) r.fail("output '" + name + "' is defined by no node or input");
    model.graphOutputs.push_back(name);
  }
  return model;
}

}  // namespace mugraph::onnx_import
