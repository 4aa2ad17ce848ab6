#include "onnx_import/heads_pushdown.h"

#include <algorithm>
#include <map>

#include "onnx_import/model_shapes.h"
#include "onnx_import/rope_patterns.h"

namespace mugraph::onnx_import {
namespace {

const std::set<std::string> kElementwise = {
    "Add",  "Sub",      "Mul",   "Div",   "Pow",   "Sqrt",   "Exp",  "Sigmoid", "Neg", "Reciprocal",
    "Cast", "Identity", "IsNaN", "Where", "Slice", "Concat", "Tanh", "Erf",     "Relu"};

// Whether the node computes each row along the last axis of rank-`rank` values on its own.
// (Slice and Concat are here only as the parts and head of a rotate_half, rope_patterns.h;
// rotate_pairs' nodes are taken as a group, pairsRotations below.)
bool lastAxisOnly(const Model& model, const Node& node, size_t rank) {
  if (kElementwise.count(node.op)) return true;
  std::vector<int64_t> axes;
  if (node.op == "Softmax") {
    axes = {node.intAttr("axis", -1)};
  } else if (node.op.rfind("Reduce", 0) == 0) {
    if (node.intAttr("keepdims", 1) == 0) return false;
    axes = axesOf(model, node).value_or(std::vector<int64_t>{});
  } else {
    return false;
  }
  if (axes.empty()) return false;
  return std::all_of(axes.begin(), axes.end(), [&](int64_t a) {
    const std::optional<int> axis = normalizeAxis(a, rank);
    return axis && *axis + 1 == static_cast<int>(rank);
  });
}

// The heads of a value of the transposed rank `rank`, or of one with axes appended after it
// (rotate_pairs' stacked values): the dims rank - 3 and rank - 2.
void swapHeads(graph::Dims& shape, size_t rank) {
  std::swap(shape[rank - 3], shape[rank - 2]);
}

// The nodes of every rotate_pairs (rope_patterns.h): its slices and Neg act along the last
// axis, and its stacked values append one axis after it and flatten it back, so the group
// computes each row on its own as lastAxisOnly's nodes do, through values of a rank more.
std::set<int> pairsRotations(const Model& model) {
  std::set<int> nodes;
  for (const auto& [head, rotation] : findRotations(model)) {
    if (rotation.kind != graph::OpKind::RotatePairs) continue;
    nodes.insert(head);
    nodes.insert(rotation.parts.begin(), rotation.parts.end());
  }
  return nodes;
}

}  // namespace

// A Transpose [.., a, b, c] -> [.., b, a, c] that moves no data because a or b is 1 (a decode
// step's single row, [1, 1, h, d] -> [1, h, 1, d]): a contiguous view, but pushed down like a
// head transpose it keeps the subgraph whole (the values are the same in either order).
bool swapsHeadsInPlace(const Model& model, const NodeSupport& support, const Node& node) {
  if (node.op != "Transpose" || support.transposes || support.swapsHeads) return false;
  const std::optional<std::vector<int64_t>> perm = node.intsAttr("perm");
  const std::optional<graph::Dims>& out = model.values.at(node.outputs.at(0)).shape;
  if (!perm || !out || perm->size() < 3 || stripDims(*out).size() < 3) return false;
  const size_t r = perm->size();
  for (size_t d = 0; d + 3 < r; ++d) {
    if ((*perm)[d] != static_cast<int64_t>(d)) return false;
  }
  return (*perm)[r - 3] == static_cast<int64_t>(r - 2) &&
         (*perm)[r - 2] == static_cast<int64_t>(r - 3) &&
         (*perm)[r - 1] == static_cast<int64_t>(r - 1);
}

bool joinsAsHeadTranspose(const Model& model, const std::vector<NodeSupport>& support, int view) {
  if (support[view].role != NodeRole::View) return false;
  if (!support[view].swapsHeads && !swapsHeadsInPlace(model, support[view], model.nodes[view])) {
    return false;
  }
  const int producer = model.producerOf(model.nodes[view].inputs.at(0));
  return producer >= 0 && mapped(support[producer]);
}

std::variant<PushedHeads, int> pushHeadTransposes(const Model& model,
                                                  const std::vector<NodeSupport>& support,
                                                  const std::vector<int>& nodes,
                                                  const std::vector<std::string>& outputs) {
  const std::set<int> inside(nodes.begin(), nodes.end());
  std::map<std::string, std::vector<int>> readers;
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    for (const std::string& in : model.nodes[n].inputs) readers[in].push_back(static_cast<int>(n));
  }
  auto returned = [&](const std::string& v) {
    return std::count(outputs.begin(), outputs.end(), v) > 0 ||
           std::count(model.graphOutputs.begin(), model.graphOutputs.end(), v) > 0;
  };
  PushedHeads pushed{model, support, {}};
  const std::set<int> pairs = pairsRotations(model);
  std::map<std::string, size_t> swapped;  // values whose shapes are transposed -> its rank
  for (int view : nodes) {
    if (!joinsAsHeadTranspose(model, support, view)) continue;
    const std::string& input = model.nodes[view].inputs[0];
    const size_t rank = model.values.at(input).shape->size();
    // The nodes of the subgraph that compute the transposed value, up from it.
    std::set<int> cone;
    std::vector<std::string> pending{input};
    while (!pending.empty()) {
      const std::string v = pending.back();
      pending.pop_back();
      const int p = model.producerOf(v);
      if (p < 0 || !inside.count(p) || support[p].role == NodeRole::Constant) continue;
      if (!cone.insert(p).second) continue;
      for (const std::string& in : model.nodes[p].inputs) {
        if (!in.empty()) pending.push_back(in);
      }
    }
    std::set<std::string> outside;  // tensors the cone reads from outside the subgraph
    for (int c : cone) {
      const Node& node = model.nodes[c];
      const bool pairsPart = pairs.count(c) > 0;
      if (!pairsPart && !lastAxisOnly(model, node, rank)) return view;
      for (const std::string& out : node.outputs) {
        const std::optional<graph::Dims>& shape = model.values.at(out).shape;
        const bool stacked = pairsPart && shape && shape->size() == rank + 1;
        if (!shape || (shape->size() != rank && !stacked) || returned(out)) return view;
        for (int reader : readers[out]) {
          if (!cone.count(reader) && reader != view) return view;  // read in the other order
        }
      }
      for (const std::string& in : node.inputs) {
        const int p = model.producerOf(in);
        if (in.empty() || (p >= 0 && inside.count(p)) || model.constants.count(in)) continue;
        const std::optional<graph::Dims>& shape = model.values.at(in).shape;
        if (!shape) return view;
        if (shape->size() <= 1) continue;  // broadcast along the last axis only
        if (shape->size() != rank) return view;
        for (int reader : readers[in]) {
          if (inside.count(reader) && !cone.count(reader)) return view;
        }
        outside.insert(in);
      }
    }
    for (int c : cone) {
      for (const std::string& out : model.nodes[c].outputs) swapped[out] = rank;
    }
    for (const std::string& in : outside) swapped[in] = rank;
    pushed.readSwapped.insert(outside.begin(), outside.end());
    pushed.support[view] = {NodeRole::Alias, "", false};
  }
  for (const auto& [v, rank] : swapped) swapHeads(*pushed.model.values.at(v).shape, rank);
  return pushed;
}

}  // namespace mugraph::onnx_import
