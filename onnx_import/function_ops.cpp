#include "onnx_import/function_ops.h"

#include <cmath>
#include <numbers>

namespace mugraph::onnx_import {
namespace {

// Writes one body: its nodes after `out` and the values and constants they define.
class Body {
 public:
  Body(Model& model, const Node& node, std::vector<Node>& out)
      : model_(model), node_(node), out_(out), x_(model.values.at(node.inputs.at(0))) {}

  // A scalar constant of x's element type.
  std::string scalar(const std::string& part, double value) {
    const std::string name = node_.name + "/constant_" + part;
    Value v = x_;
    v.name = name;
    v.shape = graph::Dims{};
    v.whyNoShape.clear();
    v.initializer = true;
    v.graphInput = false;
    v.dynamicDims.clear();
    model_.values[name] = v;
    model_.constants[name] = Constant{graph::Dims{}, {value}};
    return name;
  }

  // A node of the body; `result` names its output ("" for a value of its own).
  std::string op(const std::string& part, const std::string& op,
                 const std::vector<std::string>& inputs, const std::string& result = "",
                 std::map<std::string, Attribute> attributes = {}) {
    Node n;
    n.name = node_.name + "/" + part;
    n.op = op;
    n.inputs = inputs;
    n.outputs = {result.empty() ? n.name : result};
    n.attributes = std::move(attributes);
    n.origin = sourceName(node_);
    n.originOp = node_.origin.empty() ? node_.op : node_.originOp;
    if (!model_.values.count(n.outputs[0])) {
      model_.values[n.outputs[0]] = Value{n.outputs[0], x_.elemType, x_.dtype, std::nullopt,
                                          "", false, false, {}};
    }
    out_.push_back(n);
    return n.outputs[0];
  }

  const std::string& input(size_t i) const {
    static const std::string none;
    return i < node_.inputs.size() ? node_.inputs[i] : none;
  }
  const std::string& output(size_t i) const {
    static const std::string none;
    return i < node_.outputs.size() ? node_.outputs[i] : none;
  }
  const Value& x() const { return x_; }

 private:
  Model& model_;
  const Node& node_;
  std::vector<Node>& out_;
  const Value x_;
};

Attribute ints(std::vector<int64_t> values) {
  Attribute a;
  a.ints = std::move(values);
  return a;
}

Attribute integer(int64_t value) {
  Attribute a;
  a.i = value;
  return a;
}

// LayerNormalization (opset 17): normalized over the axes from `axis` on, in stash_type
// (the IR computes in its own precision, as it does RMSNorm's f32 upcast):
//   Mean = mean(X), D = X - Mean, InvStdDev = 1 / sqrt(mean(D²) + epsilon),
//   Y = D · InvStdDev · Scale + B
// with the optional outputs Mean and InvStdDev where the node names them.
void layerNormalization(Body& b, const Node& node) {
  if (!b.x().shape) return;  // its rank decides the axes: the node stays, left out with why
  const int64_t rank = static_cast<int64_t>(b.x().shape->size());
  int64_t axis = node.intAttr("axis", -1);
  if (axis < 0) axis += rank;
  std::vector<int64_t> axes;
  for (int64_t d = std::max<int64_t>(axis, 0); d < rank; ++d) axes.push_back(d);
  const std::string& x = b.input(0);
  const std::string mean =
      b.op("mean", "ReduceMean", {x}, b.output(1), {{"axes", ints(axes)}, {"keepdims", integer(1)}});
  const std::string centered = b.op("centered", "Sub", {x, mean});
  const std::string squared = b.op("squared", "Pow", {centered, b.scalar("two", 2.0)});
  const std::string variance =
      b.op("variance", "ReduceMean", {squared}, "", {{"axes", ints(axes)}, {"keepdims", integer(1)}});
  const std::string shifted =
      b.op("shifted", "Add", {variance, b.scalar("epsilon", node.floatAttr("epsilon", 1e-5))});
  const std::string deviation = b.op("deviation", "Sqrt", {shifted});
  const std::string inverse = b.op("inverse", "Reciprocal", {deviation}, b.output(2));
  const bool scaled = !b.input(1).empty(), biased = !b.input(2).empty();
  std::string y = b.op("normalized", "Mul", {centered, inverse},
                       scaled || biased ? "" : b.output(0));
  if (scaled) y = b.op("scaled", "Mul", {y, b.input(1)}, biased ? "" : b.output(0));
  if (biased) b.op("biased", "Add", {y, b.input(2)}, b.output(0));
}

// Gelu (opset 20): X · ½ · (1 + erf(X / √2)), or with approximate="tanh"
// X · ½ · (1 + tanh(√(2/π) · (X + 0.044715 · X³))).
void gelu(Body& b, const Node& node) {
  const std::string& x = b.input(0);
  std::string inner;
  std::string function;
  if (node.stringAttr("approximate", "none") == "tanh") {
    const std::string square = b.op("square", "Pow", {x, b.scalar("two", 2.0)});
    const std::string cube = b.op("cube", "Mul", {x, square});
    const std::string term = b.op("term", "Mul", {cube, b.scalar("c", 0.044715)});
    const std::string sum = b.op("sum", "Add", {x, term});
    inner = b.op("inner", "Mul", {sum, b.scalar("k", std::sqrt(2.0 / std::numbers::pi))});
    function = b.op("tanh", "Tanh", {inner});
  } else {
    inner = b.op("inner", "Mul", {x, b.scalar("k", 1.0 / std::numbers::sqrt2)});
    function = b.op("erf", "Erf", {inner});
  }
  const std::string one = b.op("one_plus", "Add", {function, b.scalar("one", 1.0)});
  const std::string half = b.op("half", "Mul", {x, b.scalar("half", 0.5)});
  b.op("product", "Mul", {half, one}, b.output(0));
}

}  // namespace

const std::string& sourceName(const Node& node) {
  return node.origin.empty() ? node.name : node.origin;
}

void expandFunctionOps(Model& model) {
  std::vector<Node> nodes;
  nodes.reserve(model.nodes.size());
  for (const Node& node : model.nodes) {
    const bool layerNorm = node.op == "LayerNormalization" && node.domain.empty() &&
                           !node.inputs.empty() && !node.inputs[0].empty() &&
                           model.values.count(node.inputs[0]);
    const std::string approximate = node.stringAttr("approximate", "none");
    const bool isGelu = node.op == "Gelu" && node.domain.empty() && !node.inputs.empty() &&
                        !node.inputs[0].empty() && model.values.count(node.inputs[0]) &&
                        !node.outputs.empty() && !node.outputs[0].empty() &&
                        (approximate == "none" || approximate == "tanh");
    if (!layerNorm && !isGelu) {
      nodes.push_back(node);
      continue;
    }
    const size_t before = nodes.size();
    Body body(model, node, nodes);
    if (layerNorm) layerNormalization(body, node);
    if (isGelu) gelu(body, node);
    if (nodes.size() == before) nodes.push_back(node);  // not expanded: left out with why
  }
  model.nodes = std::move(nodes);
  model.producers.clear();
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    for (const std::string& out : model.nodes[n].outputs) {
      if (!out.empty()) model.producers[out] = static_cast<int>(n);
    }
  }
}

}  // namespace mugraph::onnx_import
