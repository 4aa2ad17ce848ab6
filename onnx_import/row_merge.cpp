#include "onnx_import/row_merge.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "onnx_import/model_shapes.h"

namespace mugraph::onnx_import {
namespace {

using graph::Dims;

// Which merged forms a value may take, as bits: kRows keeps the last dim, kMatrices the last
// two.
constexpr unsigned kRows = 1, kMatrices = 2, kEither = kRows | kMatrices;

// Values that must be read alike (merged the same way, or not at all), and the forms each
// group's ops allow.
class MergeGroups {
 public:
  explicit MergeGroups(const Model& model) : model_(model) {}

  // `computed`: an op reads one and writes the other (an alias only relabels).
  void join(const std::string& a, const std::string& b, bool computed = true) {
    if (!multiRow(a) && !multiRow(b)) return;
    parent_[root(a)] = root(b);
    if (computed) computed_.insert(b);
  }
  void allow(const std::string& v, unsigned forms) {
    if (!multiRow(v)) return;
    auto [it, fresh] = allowed_.emplace(v, forms);
    if (!fresh) it->second &= forms;
  }
  void keepApart(const std::string& v) { allow(v, 0); }

  // x read by an element-wise op whose result y takes one of `tilings`' forms as y's rows
  // stacked over the batch (the tiling, per form); `otherForms`: those y may take whatever x is.
  struct TiledRead {
    std::string x, y;
    unsigned otherForms = 0;
    std::map<unsigned, Tiling> tilings;
  };
  void tiledRead(TiledRead read) {
    unsigned forms = read.otherForms;
    for (const auto& [form, tiling] : read.tilings) forms |= form;
    allow(read.y, forms);
    tiledReads_.push_back(std::move(read));
  }

  struct Decision {
    std::map<std::string, int> kept;      // value -> keptDims
    std::map<std::string, Tiling> tiled;  // value -> its tiling
  };

  // After every join, allow and tiled read: each value's merged form (forms()), and the values
  // read tiled. A value is read tiled only where every op that reads it does so alike (the
  // same tiling under the form its result takes); otherwise the results that needed it take
  // only their other forms, and the forms are decided again.
  Decision decide() {
    for (;;) {
      Decision d{forms(), {}};
      std::map<std::string, std::vector<const TiledRead*>> byValue;
      for (const TiledRead& read : tiledReads_) byValue[read.x].push_back(&read);
      std::set<std::string> conflicting;
      for (const auto& [x, reads] : byValue) {
        // Per read, what it needs of x: (keptDims, dimFromEnd, times), or all 0 to read x as
        // it is (its result not merged, or x broadcast whole under the result's form).
        const auto need = [&](const TiledRead& read) {
          const auto kept = d.kept.find(read.y);
          if (kept == d.kept.end()) return std::tuple<int, int, int64_t>{0, 0, 0};
          const auto tiling = read.tilings.find(kept->second == 1 ? kRows : kMatrices);
          if (tiling == read.tilings.end()) return std::tuple<int, int, int64_t>{0, 0, 0};
          return std::tuple{kept->second, tiling->second.dimFromEnd, tiling->second.times};
        };
        const auto first = need(*reads.front());
        const bool alike = reads.size() == readers(x) &&
                           std::all_of(reads.begin(), reads.end(),
                                       [&](const TiledRead* read) { return need(*read) == first; });
        if (!alike) {
          conflicting.insert(x);
        } else if (std::get<0>(first) != 0) {
          d.kept[x] = std::get<0>(first);
          d.tiled[x] = Tiling{std::get<1>(first), std::get<2>(first)};
        }
      }
      if (conflicting.empty()) return d;
      std::vector<TiledRead> rest;
      for (TiledRead& read : tiledReads_) {
        if (!conflicting.count(read.x)) {
          rest.push_back(std::move(read));
        } else {
          allow(read.y, read.otherForms);
        }
      }
      tiledReads_ = std::move(rest);
    }
  }

  // The form of each group where an op computes one of its values and its ops allow one (rows
  // where they allow both), and each value can be read merged (static dims, stored row-major,
  // a float). Values only relabelled or left to the framework keep their shape: merging them
  // gains no subgraph anything.
  std::map<std::string, int> forms() {
    std::map<std::string, unsigned> forms;  // group root -> allowed forms
    for (const auto& [name, value] : model_.values) {
      if (multiRow(name)) forms.emplace(root(name), kEither);
    }
    for (const auto& [v, allowed] : allowed_) forms[root(v)] &= allowed;
    for (const auto& [name, value] : model_.values) {
      if (!multiRow(name)) continue;
      const bool dynamic = std::any_of(value.dynamicDims.begin(), value.dynamicDims.end(),
                                       [](const std::string& d) { return !d.empty(); });
      if (dynamic || !value.dtype || value.storedLayout != graph::Layout::RowMajor) {
        forms[root(name)] = 0;
      }
    }
    std::set<std::string> computedRoots;
    for (const std::string& v : computed_) computedRoots.insert(root(v));
    std::map<std::string, int> kept;
    for (const auto& [name, value] : model_.values) {
      if (!multiRow(name)) continue;
      const std::string r = root(name);
      if (!computedRoots.count(r)) continue;
      const unsigned f = forms[r];
      if (f & kRows) {
        kept[name] = 1;
      } else if (f & kMatrices) {
        kept[name] = 2;
      }
    }
    return kept;
  }

  // A value of rank 3 or more once its leading 1s are dropped: one whose leading dims could be
  // merged.
  bool multiRow(const std::string& v) const {
    const auto found = model_.values.find(v);
    return found != model_.values.end() && found->second.shape &&
           stripDims(*found->second.shape).size() >= 3;
  }

 private:
  std::string root(const std::string& v) {
    auto found = parent_.find(v);
    if (found == parent_.end() || found->second == v) return v;
    const std::string r = root(found->second);
    parent_[v] = r;
    return r;
  }

  // How many inputs of the model's nodes read v.
  size_t readers(const std::string& v) const {
    size_t n = 0;
    for (const Node& node : model_.nodes)
      n += std::count(node.inputs.begin(), node.inputs.end(), v);
    return n;
  }

  const Model& model_;
  std::vector<TiledRead> tiledReads_;
  std::map<std::string, std::string> parent_;
  std::map<std::string, unsigned> allowed_;  // per value, whatever group it ends in
  std::set<std::string> computed_;           // results of ops
};

bool scalarOperand(const Model& model, const std::string& v) {
  const auto c = model.constants.find(v);
  if (c != model.constants.end() && c->second.values.size() == 1) return true;
  const auto found = model.values.find(v);
  if (found == model.values.end() || !found->second.shape) return false;
  const Dims& shape = *found->second.shape;
  return std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d == 1; });
}

// Whether a subgraph can only read v from memory, as the binding hands it over: a value the
// framework computes (or the model's input or weight) with static dims, stored row-major.
bool readFromMemory(const Model& model, const std::vector<NodeSupport>& support,
                    const std::string& v) {
  if (model.constants.count(v)) return false;
  const Value& value = model.values.at(v);
  const int producer = model.producerOf(v);
  if (producer >= 0 ? support[producer].role != NodeRole::Unsupported
                    : !value.graphInput && !value.initializer) {
    return false;
  }
  return value.shape && value.dtype && value.storedLayout == graph::Layout::RowMajor &&
         std::all_of(value.dynamicDims.begin(), value.dynamicDims.end(),
                     [](const std::string& d) { return d.empty(); });
}

// An operand x of an element-wise op whose result is y. Per form, x is read alike (its merged
// dims equal y's: the same shape, a per-row column, a per-matrix row) and joins y's group, or
// is broadcast over y's merged dims whole (every merged dim of x is 1: a norm's weight, a
// table of [s, t] for every head), or broadcast over the leading ones alone (its merged dims 1
// and then y's: a table of positions [1, s, h] for every sequence of the batch) where x is read
// from memory, read tiled, or neither: that form is not allowed.
void relateOperand(MergeGroups& groups, const Model& model, const std::vector<NodeSupport>& support,
                   const std::string& x, const std::string& y) {
  if (scalarOperand(model, x)) return;
  const std::optional<Dims>& xs = model.values.at(x).shape;
  const std::optional<Dims>& ys = model.values.at(y).shape;
  if (!xs || !ys || xs->size() > ys->size()) {
    groups.keepApart(x);
    groups.keepApart(y);
    return;
  }
  Dims padded(ys->size() - xs->size(), 1);
  padded.insert(padded.end(), xs->begin(), xs->end());
  unsigned alike = 0, broadcast = 0;
  std::map<unsigned, Tiling> tilings;
  for (const auto& [form, kept] : {std::pair{kRows, size_t{1}}, std::pair{kMatrices, size_t{2}}}) {
    if (padded.size() <= kept) continue;
    const size_t merged = padded.size() - kept;
    if (std::equal(padded.begin(), padded.begin() + merged, ys->begin())) alike |= form;
    size_t ones = 0;
    while (ones < merged && padded[ones] == 1) ++ones;
    if (ones == merged) {
      broadcast |= form;
    } else if (std::equal(padded.begin() + ones, padded.begin() + merged, ys->begin() + ones)) {
      int64_t times = 1;
      for (size_t d = 0; d < ones; ++d) times *= (*ys)[d];
      // x stacked `times` along its first dim past the ones is y's merged rows, in order.
      if (times > 1) tilings[form] = Tiling{static_cast<int>(merged - ones + kept), times};
    }
  }
  if (alike) {
    groups.join(x, y);
    groups.allow(y, alike);
  } else if (!tilings.empty() && readFromMemory(model, support, x)) {
    groups.tiledRead({x, y, broadcast, tilings});
  } else {
    groups.allow(y, broadcast);
  }
}

// The forms under which a reduction or softmax acts over kept dims alone, keeping them.
unsigned reductionForms(const Model& model, const Node& node) {
  const std::optional<Dims>& shape = model.values.at(node.inputs.at(0)).shape;
  if (!shape) return 0;
  const size_t rank = shape->size();
  std::vector<int64_t> axes;
  if (node.op == "Softmax") {
    axes = {node.intAttr("axis", -1)};
  } else {
    if (node.intAttr("keepdims", 1) == 0) return 0;
    const std::optional<std::vector<int64_t>> given = axesOf(model, node);
    if (!given || given->empty()) return 0;
    axes = *given;
  }
  unsigned forms = kEither;
  for (int64_t a : axes) {
    const std::optional<int> d = normalizeAxis(a, rank);
    if (!d) return 0;
    if (*d < static_cast<int>(rank) - 1) forms &= ~kRows;
    if (*d < static_cast<int>(rank) - 2) forms &= ~kMatrices;
  }
  return forms;
}

void relateMatmul(MergeGroups& groups, const Model& model, const Node& node) {
  const std::string &a = node.inputs[0], &b = node.inputs[1], &y = node.outputs[0];
  const std::optional<Dims>& as = model.values.at(a).shape;
  const std::optional<Dims>& bs = model.values.at(b).shape;
  if (!as || !bs) return;
  if (!groups.multiRow(b)) {  // a matrix: rows of a times it
    if (stripDims(*bs).size() <= 2 && bs->size() >= 2) {
      groups.join(a, y);
      groups.allow(y, kRows);
      return;
    }
  } else if (as->size() == bs->size() &&
             std::equal(as->begin(), as->end() - 2, bs->begin())) {  // batched alike
    groups.join(a, y);
    groups.join(b, y);
    groups.allow(y, kMatrices);
    return;
  }
  groups.keepApart(a);
  groups.keepApart(b);
  groups.keepApart(y);
}

void relateNode(MergeGroups& groups, const Model& model, const std::vector<NodeSupport>& supports,
                size_t n) {
  const Node& node = model.nodes[n];
  const NodeSupport& support = supports[n];
  static const std::set<std::string> kElementwise = {"Exp",  "Sqrt", "Sigmoid", "Tanh",      "Erf",
                                                     "Relu", "Neg",  "Pow",     "Reciprocal"};
  const auto apart = [&] {
    for (const std::string& v : node.inputs) groups.keepApart(v);
    for (const std::string& v : node.outputs) groups.keepApart(v);
  };
  if (node.outputs.empty() || node.inputs.empty()) return apart();
  const std::string& y = node.outputs[0];
  switch (support.role) {
    case NodeRole::Unsupported:
      return;  // the framework reads and writes memory
    case NodeRole::Alias:
      return groups.join(node.inputs.at(support.aliasInput), y, false);
    case NodeRole::View:
      // A reshape relabels. A swap of the last two dims reads matrices transposed (the layout
      // is of the last two dims). Other transposes need the dims apart: one of the heads, and
      // one that moves no data (a decode step's heads over one row), which the heads pushdown
      // (heads_pushdown.h) may read through.
      if (support.transposes) {
        groups.allow(y, kMatrices);
      } else if (support.swapsHeads || node.op == "Transpose") {
        apart();
      }
      return;
    case NodeRole::Compute:
      break;
    default:  // constants, guards, the parts of patterns
      return apart();
  }
  const std::string& op = node.op;
  if (support.causal) {  // causal_mask of the scores: per matrix; the mask is never read
    const std::string& scores = node.inputs.at(1 - support.causal->maskInput);
    groups.join(scores, y);
    groups.allow(y, kMatrices);
    return;
  }
  if (kElementwise.count(op)) return groups.join(node.inputs[0], y);
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    for (const std::string& x : node.inputs) relateOperand(groups, model, supports, x, y);
    return;
  }
  if (op == "MatMul" && node.inputs.size() == 2) return relateMatmul(groups, model, node);
  if (op == "Softmax" || op.rfind("Reduce", 0) == 0) {
    groups.join(node.inputs[0], y);
    groups.allow(y, reductionForms(model, node));
    return;
  }
  if (op == "Gemm") return;  // matrices only
  apart();
}

}  // namespace

bool mergeLeadingDims(Model& model, const std::vector<NodeSupport>& support) {
  MergeGroups groups(model);
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    relateNode(groups, model, support, n);
  }
  const MergeGroups::Decision decided = groups.decide();
  for (auto& [name, value] : model.values) {
    const auto kept = decided.kept.find(name);
    value.keptDims = kept == decided.kept.end() ? 0 : kept->second;
    const auto tiled = decided.tiled.find(name);
    value.tiling = tiled == decided.tiled.end() ? Tiling{} : tiled->second;
  }
  return !decided.kept.empty();
}

}  // namespace mugraph::onnx_import
