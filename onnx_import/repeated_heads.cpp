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
  std::vector<int> relabels;  // the Expand, copies of it, and the Unsqueeze before it
  int64_t heads = 0, rep = 0;
  int headFromEnd = 0;  // the head dim's position counted from the last dim (1 = last)
};

// value ← views ← Reshape merging (kv, rep) ← [copies] ← Expand along a new dim of 1 ←
// Unsqueeze.
std::optional<Repeat> repeatBehind(const Model& model, const std::vector<NodeSupport>& support,
                                   std::string value) {
  int n = model.producerOf(value);
  while (n >= 0 && support[n].role == NodeRole::View && model.nodes[n].op != "Reshape") {
    n = model.producerOf(model.nodes[n].inputs.at(0));
  }
  if (n < 0 || model.nodes[n].op != "Reshape") return std::nullopt;
  const Node& reshape = model.nodes[n];
  std::vector<int> relabels;
  // With one KV head (multi-query attention) the merge [1, 1, rep, s, d] -> [1, rep, s, d]
  // only drops a leading 1: an alias (or one left out between nodes left to the framework),
  // which the fold makes a view like the Expand.
  if (support[n].role != NodeRole::View) {
    const std::optional<Dims>& from = model.values.at(reshape.inputs.at(0)).shape;
    const std::optional<Dims>& to = model.values.at(reshape.outputs.at(0)).shape;
    if (!from || !to || !sameUpToLeadingOnes(*from, *to)) return std::nullopt;
    relabels.push_back(n);
  }
  int e = model.producerOf(reshape.inputs.at(0));
  // repeat_interleave and repeat_kv may copy the expanded tensor (a clone) before the reshape
  while (e >= 0 && model.nodes[e].op == "Identity" && model.nodes[e].domain.empty()) {
    relabels.push_back(e);
    e = model.producerOf(model.nodes[e].inputs.at(0));
  }
  if (e < 0 || model.nodes[e].op != "Expand") return std::nullopt;
  relabels.push_back(e);
  const Dims& in = *model.values.at(model.nodes[e].inputs.at(0)).shape;
  const Dims& out = *model.values.at(model.nodes[e].outputs.at(0)).shape;
  const std::optional<Dims>& merged = model.values.at(reshape.outputs.at(0)).shape;
  if (!merged || in.size() != out.size()) return std::nullopt;
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
  // The merge may also drop leading dims of 1 (the dynamo exporter's [1, kv, rep, s, d] ->
  // [h, s, d]), which the IR never keeps: compare without them.
  if (!sameUpToLeadingOnes(expected, *merged)) return std::nullopt;
  // The Unsqueeze inserting the repeated dim: with the fold, it relabels like the Expand.
  const int u = model.producerOf(model.nodes[e].inputs.at(0));
  if (u >= 0 && (model.nodes[u].op == "Reshape" || model.nodes[u].op == "Unsqueeze")) {
    Dims squeezed = in;
    squeezed.erase(squeezed.begin() + axis);
    const std::optional<Dims>& before = model.values.at(model.nodes[u].inputs.at(0)).shape;
    if (before && *before == squeezed) relabels.push_back(u);
  }
  return Repeat{relabels, out[axis - 1] * out[axis], out[axis],
                static_cast<int>(expected.size()) - (axis - 1)};
}

bool hasHeads(const Dims& shape, const Repeat& r) {
  const int rank = static_cast<int>(shape.size());
  return rank >= r.headFromEnd && r.headFromEnd >= 2 && shape[rank - r.headFromEnd] == r.heads;
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

bool isBinary(const Node& node) {
  return node.op == "Add" || node.op == "Sub" || node.op == "Mul" || node.op == "Div";
}

// Inputs without the heads (a causal mask [S, T], a RoPE table [S, D]) that an element-wise op
// broadcasts over the query heads of a folded value: folded, row i of each head's rows reads
// row i of the input, so the subgraph reads it repeated rep times along its rows (the binding
// makes the copies, partition_json.h). nullopt where such an input is read otherwise too
// (unfolded), is computed in the subgraph, or comes through a view (the copies are made of the
// value itself).
std::optional<std::map<std::string, Tiling>> tiledInputs(
    const Model& model, const std::vector<NodeSupport>& support, const std::vector<int>& nodes,
    const std::set<std::string>& inside, std::map<std::string, Kind>& kinds, const Repeat& fold) {
  const int rowsFromEnd = fold.headFromEnd - 1;
  std::map<std::string, Tiling> tiled;
  std::set<std::string> readOtherwise;
  for (int n : nodes) {
    const Node& node = model.nodes[n];
    const bool folds = isBinary(node) && kinds[node.outputs.at(0)] == Kind::Folded;
    for (const std::string& in : node.inputs) {
      if (in.empty() || inside.count(in) || model.constants.count(in)) continue;
      if (support[n].causal && support[n].causal->mask == in) continue;  // never read
      if (kinds[in] != Kind::Plain) continue;
      const std::optional<Dims>& shape = model.values.at(in).shape;
      const bool rows = shape && static_cast<int>(shape->size()) >= rowsFromEnd &&
                        (*shape)[shape->size() - rowsFromEnd] != 1;
      if (!folds || !rows) {
        readOtherwise.insert(in);
        continue;
      }
      const int p = model.producerOf(in);
      if (p >= 0 && support[p].role == NodeRole::View) return std::nullopt;
      if (model.values.at(in).tiling.times != 1) return std::nullopt;  // tiled over a batch
      tiled[in] = Tiling{rowsFromEnd, fold.rep};
    }
  }
  for (const auto& [value, tiling] : tiled) {
    if (readOtherwise.count(value)) return std::nullopt;
  }
  return tiled;
}

}  // namespace

std::optional<FoldedHeads> foldRepeatedHeads(const Model& model,
                                             const std::vector<NodeSupport>& support,
                                             const std::vector<int>& nodes,
                                             const std::vector<std::string>& outputs,
                                             const std::set<std::string>& readSwapped) {
  std::set<std::string> inside;
  for (int n : nodes) inside.insert(model.nodes[n].outputs.begin(), model.nodes[n].outputs.end());
  std::map<std::string, Kind> kinds;
  std::optional<Repeat> fold;
  std::set<int> relabels;
  for (int n : nodes) {
    for (const std::string& in : model.nodes[n].inputs) {
      if (in.empty() || inside.count(in)) continue;
      std::optional<Repeat> r = repeatBehind(model, support, in);
      // The merge of one KV head's repeats is an alias the subgraph holds: the repeats (the
      // Expand's result) come from outside, and the merge is this node.
      if (!r && model.nodes[n].op == "Reshape" && support[n].role == NodeRole::Alias &&
          in == model.nodes[n].inputs.at(support[n].aliasInput)) {
        r = repeatBehind(model, support, model.nodes[n].outputs.at(0));
        if (r) std::erase(r->relabels, n);  // it stays the subgraph's alias
      }
      if (!r) continue;
      if (fold &&
          (fold->heads != r->heads || fold->rep != r->rep || fold->headFromEnd != r->headFromEnd)) {
        return std::nullopt;
      }
      fold = r;
      relabels.insert(r->relabels.begin(), r->relabels.end());
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
    // Aliases (casts, copies, reshapes of leading size-1 dims) keep the heads' place counted
    // from the last dim, which is all the fold reads; a value without them is refused below.
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
  const std::optional<std::map<std::string, Tiling>> tiled =
      tiledInputs(model, support, nodes, inside, kinds, *fold);
  if (!tiled) return std::nullopt;
  FoldedHeads folded{model, support, "", *tiled};
  for (const auto& [value, kind] : kinds) {
    if (kind == Kind::Plain) continue;
    if (kind == Kind::Folded && !inside.count(value)) {
      // An input folds only where it is stored as it is read (no transposing view on the way,
      // not read with its heads swapped).
      if (readSwapped.count(value)) return std::nullopt;
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
  // A folded value's rows mix heads and positions, which no layout of its folded shape
  // describes in [.., s, h, d] order, and the repeats are read through relabels the
  // framework's layouts were not classified with: the folded program reads every buffer in its
  // logical order (the binding hands it over so) and writes its results row-major.
  for (auto& [name, value] : folded.model.values) value.storedLayout = graph::Layout::RowMajor;
  for (const auto& [value, tiling] : *tiled) {
    graph::Dims& shape = *folded.model.values.at(value).shape;
    shape[shape.size() - tiling.dimFromEnd] *= tiling.times;
  }
  // Folded, a repeat reads its source as it is: the Expand, its copies and the Unsqueeze
  // relabel (a view keeps the layout its source has, heads_transposed for V's head transpose).
  for (int r : relabels) folded.support[r] = {NodeRole::View, "", false};
  folded.description = std::to_string(fold->heads) + " query heads read as " +
                       std::to_string(fold->heads / fold->rep) + " KV groups of " +
                       std::to_string(fold->rep) + " (rows folded)";
  return folded;
}

}  // namespace mugraph::onnx_import
