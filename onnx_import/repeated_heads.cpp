#include "onnx_import/repeated_heads.h"

#include <algorithm>
#include <map>
#include <set>

#include "onnx_import/model_shapes.h"

namespace mugraph::onnx_import {
namespace {

using graph::Dims;

// How a value of the subgraph relates to the query heads: Folded (H heads, read as kv groups
// of rep·rows), Shared (one per KV head: the repeats' sources and what is computed from them
// alone), Plain (no head dim).
enum class Kind { Plain, Shared, Folded };

struct Repeat {
  int expand = -1;
  int64_t heads = 0, rep = 0;
  int headFromEnd = 0;  // the head dim's position counted from the last dim (1 = last)
};

// value ← views ← Reshape merging (kv, rep) ← Expand along a new dim of 1 ← Unsqueeze.
std::optional<Repeat> repeatBehind(const Model& model, const std::vector<NodeSupport>& support,
                                   std::string value) {
  int n = model.producerOf(value);
  while (n >= 0 && support[n].role == NodeRole::View && model.nodes[n].op != "Reshape") {
    n = model.producerOf(model.nodes[n].inputs.at(0));
  }
  if (n < 0 || model.nodes[n].op != "Reshape" || support[n].role != NodeRole::View)
    return std::nullopt;
  const Node& reshape = model.nodes[n];
  const int e = model.producerOf(reshape.inputs.at(0));
  if (e < 0 || model.nodes[e].op != "Expand") return std::nullopt;
  const Dims& in = *model.values.at(model.nodes[e].inputs.at(0)).shape;
  const Dims& out = *model.values.at(model.nodes[e].outputs.at(0)).shape;
  const std::optional<Dims>& merged = model.values.at(reshape.outputs.at(0)).shape;
  if (!merged || in.size() != out.size() || merged->size() + 1 != out.size()) return std::nullopt;
  int axis = -1;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == out[d]) continue;
    if (in[d] != 1 || axis >= 0) return std::nullopt;
    axis = static_cast<int>(d);
  }
  if (axis < 1) return std::nullopt;
  Dims expected(out.begin(), out.end());
  expected[axis - 1] *= expected[axis];
  expected.erase(expected.begin() + axis);
  if (expected != *merged) return std::nullopt;
  return Repeat{e, out[axis - 1] * out[axis], out[axis],
                static_cast<int>(merged->size()) - (axis - 1)};
}

bool hasHeads(const Dims& shape, const Repeat& r) {
  const int rank = static_cast<int>(shape.size());
  return rank > r.headFromEnd && r.headFromEnd >= 2 && shape[rank - r.headFromEnd] == r.heads;
}

Dims foldedShape(Dims shape, Kind kind, const Repeat& r) {
  const int h = static_cast<int>(shape.size()) - r.headFromEnd;
  shape[h] = r.heads / r.rep;
  if (kind == Kind::Folded) shape[h + 1] *= r.rep;
  return shape;
}

// Whether the op keeps heads and rows apart for operands of these kinds.
bool keepsHeadsApart(const Model& model, const Node& node, const std::vector<Kind>& in,
                     const Repeat& r) {
  const bool any = std::any_of(in.begin(), in.end(), [](Kind k) { return k != Kind::Plain; });
  if (!any) return true;
  if (node.op == "Gemm") return false;
  if (node.op == "MatMul") return in.size() == 2 && in[1] != Kind::Folded;
  std::vector<int64_t> axes;
  if (node.op == "Softmax")
    axes = {node.intAttr("axis", -1)};
  else if (node.op.rfind("Reduce", 0) == 0)
    axes = axesOf(model, node).value_or(std::vector<int64_t>{});
  else
    return true;
  const size_t rank = model.values.at(node.inputs[0]).shape->size();
  if (axes.empty()) return false;
  for (int64_t a : axes) {
    const std::optional<int> axis = normalizeAxis(a, rank);
    const int h = static_cast<int>(rank) - r.headFromEnd;
    if (!axis || *axis == h || (in[0] == Kind::Folded && *axis == h + 1)) return false;
  }
  return true;
}

}  // namespace

std::optional<FoldedHeads> foldRepeatedHeads(const Model& model,
                                             const std::vector<NodeSupport>& support,
                                             const std::vector<int>& nodes,
                                             const std::vector<std::string>& outputs) {
  std::set<std::string> inside;
  for (int n : nodes) inside.insert(model.nodes[n].outputs.begin(), model.nodes[n].outputs.end());
  std::map<std::string, Kind> kinds;
  std::optional<Repeat> fold;
  std::set<int> expands;
  for (int n : nodes) {
    for (const std::string& in : model.nodes[n].inputs) {
      if (in.empty() || inside.count(in)) continue;
      const std::optional<Repeat> r = repeatBehind(model, support, in);
      if (!r) continue;
      if (fold &&
          (fold->heads != r->heads || fold->rep != r->rep || fold->headFromEnd != r->headFromEnd)) {
        return std::nullopt;
      }
      fold = r;
      expands.insert(r->expand);
      kinds[in] = Kind::Shared;
    }
  }
  if (!fold) return std::nullopt;
  auto kindOf = [&](const std::string& value) {
    if (const auto k = kinds.find(value); k != kinds.end()) return k->second;
    const std::optional<Dims>& shape = model.values.at(value).shape;
    // An input with the query heads: its rows fold only where it is stored row by row.
    const Kind k = shape && hasHeads(*shape, *fold) ? Kind::Folded : Kind::Plain;
    kinds[value] = k;
    return k;
  };
  for (int n : nodes) {
    const Node& node = model.nodes[n];
    if (support[n].role == NodeRole::Alias && node.op != "Cast" && node.op != "Identity" &&
        node.op != "Where") {
      return std::nullopt;
    }
    std::vector<Kind> in;
    for (const std::string& v : node.inputs) {
      if (!v.empty() && !model.constants.count(v)) in.push_back(kindOf(v));
    }
    if (!keepsHeadsApart(model, node, in, *fold)) return std::nullopt;
    Kind out = Kind::Plain;
    for (Kind k : in) out = std::max(out, k);
    for (const std::string& v : node.outputs) {
      const std::optional<Dims>& shape = model.values.at(v).shape;
      if (out != Kind::Plain && (!shape || !hasHeads(*shape, *fold))) return std::nullopt;
      kinds[v] = out;
    }
  }
  for (const std::string& out : outputs) {
    if (kinds[out] == Kind::Shared) return std::nullopt;  // its readers expect every head
  }
  FoldedHeads folded{model, support, ""};
  for (const auto& [value, kind] : kinds) {
    if (kind == Kind::Plain) continue;
    if (kind == Kind::Folded && !inside.count(value)) {
      // An input folds only where it is stored as it is read (no transposing view on the way).
      for (int p = model.producerOf(value); p >= 0 && support[p].role == NodeRole::View;
           p = model.producerOf(model.nodes[p].inputs.at(0))) {
        if (support[p].transposes || support[p].swapsHeads) return std::nullopt;
      }
    }
    Value& v = folded.model.values.at(value);
    // Only a value with the heads dim folds (a corrupted model can mark others).
    if (!v.shape || !hasHeads(*v.shape, *fold)) return std::nullopt;
    v.shape = foldedShape(*v.shape, kind, *fold);
  }
  for (int e : expands) folded.support[e] = {NodeRole::View, "", false};
  folded.description = std::to_string(fold->heads) + " query heads read as " +
                       std::to_string(fold->heads / fold->rep) + " KV groups of " +
                       std::to_string(fold->rep) + " (rows folded)";
  return folded;
}

}  // namespace mugraph::onnx_import
