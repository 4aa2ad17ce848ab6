#include "onnx_import/onnx_model.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "graph/display_text.h"
#include "graph/dynamic_dims.h"
#include "graph/error.h"
#include "onnx_import/constant_eval.h"
#include "onnx_import/onnx_tensors.h"

namespace mugraph::onnx_import {
namespace {

// Larger float tensors are read only to see whether they are a causal mask (causal_pattern.h),
// element by element, stopping at the first element that does not fit.
constexpr int64_t kMaxMaskElements = int64_t{1} << 26;

// Records a float tensor too large to be a constant the mapping reads when its values are a
// causal mask: the Add of it before a softmax is then read as causal_mask.
void noteCausalMask(Model& model, const std::string& name, const onnx::TensorProto& t) {
  const std::optional<graph::DType> dtype = floatDtype(t.data_type());
  if (!dtype || t.dims_size() < 2) return;
  graph::Dims shape(t.dims().begin(), t.dims().end());
  const std::optional<int64_t> count = graph::checkedElementCount(shape);
  if (!count || *count > kMaxMaskElements) return;
  const auto at = floatElements(t, *count);
  if (!at) return;
  if (std::optional<CausalPattern> p = causalPattern(shape, *at, lowestFinite(*dtype))) {
    model.causalConstants[name] = *p;
  }
}

// The values of an initializer or Constant node, where the importer reads them: small ones
// (`constants`), boolean and integer ones a computed mask may read (`maskOperands`), and the
// pattern of a float causal mask of any size.
void noteConstant(Model& model, const std::string& name, const onnx::TensorProto& t) {
  if (std::optional<Constant> c = readConstant(t)) {
    model.constants[name] = *c;
  } else if (std::optional<Constant> m = readMaskOperand(t, kMaxEvaluatedElements)) {
    model.maskOperands[name] = *m;
  }
  noteCausalMask(model, name, t);
}

// The symbolic dims of a model as loadModel meets them: pinned (static) or dynamic, and
// which of the user's pins and ranges named a dim of the file.
struct SymbolicDims {
  const DimPins& pins;
  const DimRanges& ranges;
  std::set<std::string> used;
  std::vector<graph::DynamicDim> dims;  // in order of first appearance

  // The reference extent of dim `name` (its pin, or its range's max), declaring it.
  int64_t extent(const std::string& name) {
    used.insert(name);
    if (pins.count(name)) return pins.at(name);
    for (const graph::DynamicDim& d : dims) {
      if (d.name == name) return d.max;
    }
    const auto range = ranges.find(name);
    const DimRange r = range == ranges.end() ? DimRange{} : range->second;
    dims.push_back(graph::DynamicDim{name, r.min, r.max});
    return r.max;
  }
};

// A value's element type and shape from its TypeProto; symbolic dims take their pins, or are
// dynamic at their reference extent.
Value describeValue(const std::string& name, const onnx::TypeProto& type, SymbolicDims& symbols) {
  Value v;
  v.name = name;
  if (!type.has_tensor_type()) {
    v.elemType = "not a tensor";
    v.whyNoShape = "not a tensor";
    return v;
  }
  const onnx::TypeProto_Tensor& tensor = type.tensor_type();
  v.elemType = elemTypeName(tensor.elem_type());
  v.dtype = floatDtype(tensor.elem_type());
  if (!tensor.has_shape()) {
    v.whyNoShape = "its shape is not in the file";
    return v;
  }
  graph::Dims dims;
  std::vector<std::string> dynamic;
  for (int d = 0; d < tensor.shape().dim_size(); ++d) {
    const onnx::TensorShapeProto_Dimension& dim = tensor.shape().dim(d);
    dynamic.emplace_back();
    if (dim.has_dim_value() && dim.dim_value() > 0) {
      dims.push_back(dim.dim_value());
    } else if (dim.has_dim_param()) {
      dims.push_back(symbols.extent(dim.dim_param()));
      if (!symbols.pins.count(dim.dim_param())) dynamic.back() = dim.dim_param();
    } else {
      v.whyNoShape = "dim " + std::to_string(d) + " has no static size";
      return v;
    }
  }
  if (std::any_of(dynamic.begin(), dynamic.end(),
                  [](const std::string& n) { return !n.empty(); })) {
    v.dynamicDims = std::move(dynamic);
  }
  if (!graph::checkedElementCount(dims)) {
    v.whyNoShape = "its " + graph::formatDims(dims) + " elements do not fit in 64 bits";
    return v;
  }
  v.shape = dims;
  return v;
}

Value describeInitializer(const onnx::TensorProto& t) {
  Value v;
  v.name = t.name();
  v.elemType = elemTypeName(t.data_type());
  v.dtype = floatDtype(t.data_type());
  const graph::Dims dims(t.dims().begin(), t.dims().end());
  if (graph::checkedElementCount(dims)) {
    v.shape = dims;
  } else {
    v.whyNoShape = "its dims " + graph::formatDims(dims) +
                   " are negative or hold more elements than fit in 64 bits";
  }
  v.initializer = true;
  return v;
}

void readAttributes(const onnx::NodeProto& proto, Node& node, Model& model) {
  for (const onnx::AttributeProto& a : proto.attribute()) {
    Attribute attr;
    if (a.has_i()) attr.i = a.i();
    if (a.has_f()) attr.f = a.f();
    attr.ints.assign(a.ints().begin(), a.ints().end());
    if (a.has_t()) attr.tensor = readConstant(a.t());
    if (a.has_s()) attr.s = a.s();
    node.attributes[a.name()] = attr;
  }
  if (node.op != "Constant" || node.domain != "" || node.outputs.empty()) return;
  // A Constant's value: a tensor, or one of the scalar/list forms.
  const std::string& out = node.outputs[0];
  for (const onnx::AttributeProto& a : proto.attribute()) {
    if (a.name() == "value" && a.has_t()) {
      Value v = describeInitializer(a.t());
      v.name = out;
      v.initializer = true;
      model.values[out] = v;
      noteConstant(model, out, a.t());
    } else if (a.name() == "value_float" || a.name() == "value_int") {
      Value v;
      v.name = out;
      v.elemType = a.name() == "value_float" ? "float" : "int64";
      if (a.name() == "value_float") v.dtype = graph::DType::F32;
      v.shape = graph::Dims{};
      v.initializer = true;
      model.values[out] = v;
      model.constants[out] = {{}, {a.name() == "value_float" ? a.f() : double(a.i())}};
    } else if (a.name() == "value_floats" || a.name() == "value_ints") {
      Constant c;
      if (a.name() == "value_floats")
        c.values.assign(a.floats().begin(), a.floats().end());
      else
        c.values.assign(a.ints().begin(), a.ints().end());
      c.shape = {static_cast<int64_t>(c.values.size())};
      Value v;
      v.name = out;
      v.elemType = a.name() == "value_floats" ? "float" : "int64";
      if (a.name() == "value_floats") v.dtype = graph::DType::F32;
      v.shape = c.shape;
      v.initializer = true;
      model.values[out] = v;
      model.constants[out] = c;
    }
  }
}

int64_t defaultOpset(const onnx::ModelProto& proto, const std::string& path) {
  for (const onnx::OperatorSetIdProto& set : proto.opset_import()) {
    if (set.domain().empty() || set.domain() == "ai.onnx") return set.version();
  }
  throw UserError(path, "the model imports no opset of the default ONNX domain");
}

onnx::ModelProto parseFile(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) throw UserError(path, "no such file");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in && !in.eof()) throw UserError(path, "cannot be read");
  onnx::ModelProto proto;
  const std::string data = bytes.str();
  if (data.empty()) throw UserError(path, "is empty, not an ONNX model");
  if (!proto.ParseFromString(data)) {
    throw UserError(
        path, "is not a valid ONNX model: the protobuf does not parse (truncated or not ONNX)");
  }
  if (!proto.has_graph() || proto.graph().node_size() == 0) {
    throw UserError(path, "holds no graph with nodes (truncated, or not an ONNX model)");
  }
  return proto;
}

// A model's names are written into summary.json, program text and messages, so each must be
// writable text (graph/display_text.h). Checked before any work: a bad name is reported up
// front, never after a search whose results could then not be written.
void checkNames(const onnx::GraphProto& g, const std::string& path) {
  const auto check = [&](const std::string& name, const std::string& what) {
    if (!graph::isWritableName(name)) {
      throw UserError(path, what + " '" + graph::escapeForDisplay(name) +
                                "' is not text (invalid UTF-8 or a control character)");
    }
  };
  const auto checkValueInfo = [&](const onnx::ValueInfoProto& info) {
    check(info.name(), "value name");
    if (!info.type().has_tensor_type()) return;
    for (const auto& dim : info.type().tensor_type().shape().dim()) {
      if (dim.has_dim_param()) check(dim.dim_param(), "dim name of '" + info.name() + "'");
    }
  };
  check(g.name(), "graph name");
  for (const onnx::TensorProto& t : g.initializer()) check(t.name(), "initializer name");
  for (const onnx::ValueInfoProto& info : g.value_info()) checkValueInfo(info);
  for (const onnx::ValueInfoProto& info : g.input()) checkValueInfo(info);
  for (const onnx::ValueInfoProto& info : g.output()) checkValueInfo(info);
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& p = g.node(i);
    const std::string node = "node " + std::to_string(i);
    check(p.name(), node + " name");
    check(p.op_type(), node + " op type");
    check(p.domain(), node + " domain");
    for (const std::string& value : p.input()) check(value, node + " input");
    for (const std::string& value : p.output()) check(value, node + " output");
    for (const onnx::AttributeProto& a : p.attribute()) check(a.name(), node + " attribute");
  }
}

}  // namespace

int64_t Node::intAttr(const std::string& key, int64_t fallback) const {
  const auto found = attributes.find(key);
  return found != attributes.end() && found->second.i ? *found->second.i : fallback;
}

std::optional<std::vector<int64_t>> Node::intsAttr(const std::string& key) const {
  const auto found = attributes.find(key);
  if (found == attributes.end()) return std::nullopt;
  return found->second.ints;
}

double Node::floatAttr(const std::string& key, double fallback) const {
  const auto found = attributes.find(key);
  return found != attributes.end() && found->second.f ? *found->second.f : fallback;
}

std::string Node::stringAttr(const std::string& key, const std::string& fallback) const {
  const auto found = attributes.find(key);
  return found != attributes.end() && found->second.s ? *found->second.s : fallback;
}

int Model::producerOf(const std::string& value) const {
  const auto found = producers.find(value);
  return found == producers.end() ? -1 : found->second;
}

bool isOnnxPath(const std::string& path) {
  return std::filesystem::path(path).extension() == ".onnx";
}

std::pair<std::string, int64_t> parseDimPin(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw UserError("--dim", "'" + text + "' is not name=value");
  }
  const std::string value = text.substr(eq + 1);
  size_t used = 0;
  int64_t n = 0;
  try {
    n = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty() || n < 1) {
    throw UserError("--dim", "'" + text + "': the value must be a positive integer");
  }
  return {text.substr(0, eq), n};
}

std::pair<std::string, DimRange> parseDimRange(const std::string& text) {
  const size_t eq = text.find('=');
  const size_t colon = text.find(':', eq == std::string::npos ? 0 : eq);
  const auto number = [&](const std::string& digits, int64_t& out) {
    size_t used = 0;
    try {
      out = std::stoll(digits, &used);
    } catch (const std::exception&) {
      return false;
    }
    return used == digits.size() && !digits.empty();
  };
  DimRange range;
  if (eq == std::string::npos || eq == 0 || colon == std::string::npos ||
      !number(text.substr(eq + 1, colon - eq - 1), range.min) ||
      !number(text.substr(colon + 1), range.max)) {
    throw UserError("--dim-range", "'" + text + "' is not name=min:max (e.g. seq=1:8192)");
  }
  if (auto problem = graph::dimDeclarationProblem(text.substr(0, eq), range.min, range.max, {})) {
    throw UserError("--dim-range", "'" + text + "': " + problem->reason);
  }
  return {text.substr(0, eq), range};
}

Model loadModel(const std::string& path, const DimPins& pins, const DimRanges& ranges) {
  const onnx::ModelProto proto = parseFile(path);
  Model model;
  model.path = path;
  model.opset = defaultOpset(proto, path);
  if (model.opset < kMinOpset || model.opset > kMaxOpset) {
    throw UserError(path, "opset " + std::to_string(model.opset) +
                              " of the default domain is out of range (" +
                              std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) +
                              " are supported)");
  }
  const onnx::GraphProto& g = proto.graph();
  checkNames(g, path);
  model.graphName = g.name();
  SymbolicDims symbols{pins, ranges, {}, {}};
  for (const onnx::TensorProto& t : g.initializer()) {
    model.values[t.name()] = describeInitializer(t);
    noteConstant(model, t.name(), t);
  }
  for (const onnx::ValueInfoProto& info : g.value_info()) {
    if (model.values.count(info.name())) continue;  // an initializer's own dims are exact
    model.values[info.name()] = describeValue(info.name(), info.type(), symbols);
  }
  for (const onnx::ValueInfoProto& info : g.output()) {
    model.values[info.name()] = describeValue(info.name(), info.type(), symbols);
    model.graphOutputs.push_back(info.name());
  }
  for (const onnx::ValueInfoProto& info : g.input()) {
    if (model.values.count(info.name()) && model.values[info.name()].initializer) continue;
    Value v = describeValue(info.name(), info.type(), symbols);
    v.graphInput = true;
    if (!v.shape) throw UserError(path, "input '" + info.name() + "': " + v.whyNoShape);
    model.values[info.name()] = v;
    model.graphInputs.push_back(info.name());
  }
  for (const auto& [name, value] : pins) {
    if (!symbols.used.count(name)) {
      throw UserError("--dim", "'" + name + "' names no dynamic dim of " + path);
    }
  }
  for (const auto& [name, range] : ranges) {
    if (!symbols.used.count(name)) {
      throw UserError("--dim-range", "'" + name + "' names no dynamic dim of " + path);
    }
  }
  std::vector<graph::DynamicDim> declared;
  for (const graph::DynamicDim& d : symbols.dims) {
    if (auto problem = graph::dimDeclarationProblem(d.name, d.min, d.max, declared)) {
      throw UserError(path, problem->reason + " (a symbolic dim of the model: pin it with --dim " +
                                d.name + "=N)");
    }
    declared.push_back(d);
  }
  model.dims = std::move(declared);
  std::set<std::string> defined;
  for (const auto& [name, value] : model.values) {
    if (value.initializer || value.graphInput) defined.insert(name);
  }
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& p = g.node(i);
    Node node;
    node.op = p.op_type();
    node.domain = p.domain() == "ai.onnx" ? "" : p.domain();
    node.name = p.name().empty() ? node.op + "_" + std::to_string(i) : p.name();
    node.inputs.assign(p.input().begin(), p.input().end());
    node.outputs.assign(p.output().begin(), p.output().end());
    for (const std::string& in : node.inputs) {
      if (!in.empty() && !defined.count(in)) {
        throw UserError(path, "node '" + node.name + "' (" + node.op + ") reads '" + in +
                                  "', which no input, initializer or earlier node defines");
      }
    }
    readAttributes(p, node, model);
    for (const std::string& out : node.outputs) {
      // ONNX graphs are in SSA form: a value defined twice would let a node read a value a
      // later node writes (a cycle through the graph). "" is an optional output left out.
      if (!out.empty() && !defined.insert(out).second) {
        throw UserError(path, "node '" + graph::escapeForDisplay(node.name) + "' (" + node.op +
                                  ") writes '" + graph::escapeForDisplay(out) +
                                  "', which an input, initializer or earlier node already defines");
      }
      defined.insert(out);
      model.producers[out] = static_cast<int>(model.nodes.size());
      if (!model.values.count(out)) {
        model.values[out] = Value{
            out, "", std::nullopt, std::nullopt, "its shape is not in the file", false, false, {}};
      }
    }
    model.nodes.push_back(std::move(node));
  }
  for (const std::string& out : model.graphOutputs) {
    if (!defined.count(out)) {
      throw UserError(path, "graph output '" + out + "' is defined by no node or input");
    }
  }
  return model;
}

}  // namespace mugraph::onnx_import
