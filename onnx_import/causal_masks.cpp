#include "onnx_import/causal_masks.h"

#include <algorithm>
#include <vector>

#include "onnx_import/model_shapes.h"
#include "onnx_import/node_support.h"

namespace mugraph::onnx_import {
namespace {

using graph::Dims;

// Our vocabulary's op for SDPA's is_causal (python/mugraph/fx_graph.py).
constexpr const char* kCausalMaskOp = "CausalMask";

bool lastTwoEqual(const Dims& a, const Dims& b) {
  return a.size() >= 2 && b.size() >= 2 && a[a.size() - 2] == b[b.size() - 2] &&
         a.back() == b.back();
}

// Nodes that pass a mask on unchanged but for its leading dims.
bool passesMaskOn(const Model& model, const Node& node) {
  static const std::set<std::string> kOps = {"Cast",    "Identity", "Reshape", "Unsqueeze",
                                             "Squeeze", "Flatten",  "Expand"};
  if (!node.domain.empty() || !kOps.count(node.op) || node.inputs.empty() ||
      node.outputs.size() != 1) {
    return false;
  }
  const Value& in = model.values.at(node.inputs[0]);
  const Value& out = model.values.at(node.outputs[0]);
  return in.dtype && out.dtype && in.shape && out.shape && lastTwoEqual(*in.shape, *out.shape);
}

// The masks the model holds: value -> its pattern, seeded by constants and CausalMask nodes and
// carried through the nodes that pass a mask on.
std::map<std::string, CausalPattern> maskValues(const Model& model) {
  std::map<std::string, CausalPattern> masks = model.causalConstants;
  for (const auto& [name, c] : model.constants) {
    const auto v = model.values.find(name);
    if (masks.count(name) || v == model.values.end() || !v->second.dtype) continue;
    const std::function<double(int64_t)> at = [&c = c](int64_t i) {
      return c.values[static_cast<size_t>(i)];
    };
    if (graph::checkedElementCount(c.shape) != static_cast<int64_t>(c.values.size())) continue;
    if (auto p = causalPattern(c.shape, at, lowestFinite(*v->second.dtype))) masks[name] = *p;
  }
  for (const Node& node : model.nodes) {
    if (node.outputs.size() != 1) continue;
    const Value& out = model.values.at(node.outputs[0]);
    if (node.op == kCausalMaskOp && node.domain.empty() && node.inputs.empty()) {
      if (out.dtype && out.shape && out.shape->size() >= 2) {
        const int64_t rows = (*out.shape)[out.shape->size() - 2], cols = out.shape->back();
        if (rows == cols && rows > 1) masks[out.name] = {rows, cols, rows};
      }
      continue;
    }
    if (passesMaskOn(model, node) && masks.count(node.inputs[0])) {
      masks[out.name] = masks.at(node.inputs[0]);
    }
  }
  return masks;
}

std::vector<int> readersOf(const Model& model, const std::string& value) {
  std::vector<int> readers;
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    const std::vector<std::string>& in = model.nodes[n].inputs;
    if (std::count(in.begin(), in.end(), value)) readers.push_back(static_cast<int>(n));
  }
  return readers;
}

bool returned(const Model& model, const std::string& value) {
  return std::count(model.graphOutputs.begin(), model.graphOutputs.end(), value) > 0;
}

// Only softmaxes over the last axis read `value` (through float casts and copies): they see
// -inf and the dtype's lowest value alike (exp gives 0 after the max is subtracted), so the
// masked logits may be -inf in the program whatever the mask held.
bool onlySoftmaxReads(const Model& model, const std::string& value, int depth = 0) {
  const std::vector<int> readers = readersOf(model, value);
  if (readers.empty() || returned(model, value) || depth > 4) return false;
  for (int r : readers) {
    const Node& node = model.nodes[r];
    const std::optional<Dims>& shape = model.values.at(value).shape;
    if (!node.domain.empty() || node.outputs.size() != 1 || !shape) return false;
    if (node.op == "Softmax") {
      const std::optional<int> axis = normalizeAxis(node.intAttr("axis", -1), shape->size());
      if (!axis || *axis + 1 != static_cast<int>(shape->size())) return false;
    } else if (node.op == "Cast" || node.op == "Identity") {
      if (!model.values.at(node.outputs[0]).dtype ||
          !onlySoftmaxReads(model, node.outputs[0], depth + 1)) {
        return false;
      }
    } else {
      return false;
    }
  }
  return true;
}

std::optional<CausalAdd> causalAdd(const Model& model, const Node& node,
                                   const std::map<std::string, CausalPattern>& masks) {
  if (node.op != "Add" || !node.domain.empty() || node.inputs.size() != 2 ||
      node.outputs.size() != 1) {
    return std::nullopt;
  }
  for (int m = 0; m < 2; ++m) {
    const auto mask = masks.find(node.inputs[m]);
    const std::string& scores = node.inputs[1 - m];
    if (mask == masks.end() || masks.count(scores)) continue;
    const Value& x = model.values.at(scores);
    const Value& out = model.values.at(node.outputs[0]);
    const std::optional<Dims>& maskShape = model.values.at(mask->first).shape;
    // The mask neither broadcasts the scores' rows or columns nor adds dims they lack.
    if (!x.dtype || !x.shape || !out.shape || !maskShape || !lastTwoEqual(*x.shape, *maskShape) ||
        !sameUpToLeadingOnes(*x.shape, *out.shape)) {
      continue;
    }
    if (!onlySoftmaxReads(model, node.outputs[0])) return std::nullopt;
    return CausalAdd{m, mask->first, mask->second.queries};
  }
  return std::nullopt;
}

}  // namespace

CausalMasks findCausalMasks(const Model& model) {
  const std::map<std::string, CausalPattern> masks = maskValues(model);
  CausalMasks found;
  if (masks.empty()) return found;
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    if (std::optional<CausalAdd> add = causalAdd(model, model.nodes[n], masks)) {
      found.adds[static_cast<int>(n)] = *add;
    }
  }
  // From the last node back, so a node's readers are decided before it.
  for (size_t n = model.nodes.size(); n-- > 0;) {
    const Node& node = model.nodes[n];
    if (node.outputs.size() != 1 || !masks.count(node.outputs[0]) ||
        returned(model, node.outputs[0]) || node.op == "Constant" ||
        model.folded.count(node.outputs[0])) {
      continue;
    }
    const std::vector<int> readers = readersOf(model, node.outputs[0]);
    const bool onlyMasks =
        !readers.empty() && std::all_of(readers.begin(), readers.end(), [&](int r) {
          const auto add = found.adds.find(r);
          return found.sources.count(r) ||
                 (add != found.adds.end() && add->second.mask == node.outputs[0] &&
                  model.nodes[r].inputs[1 - add->second.maskInput] != node.outputs[0]);
        });
    if (onlyMasks) found.sources.insert(static_cast<int>(n));
  }
  return found;
}

}  // namespace mugraph::onnx_import
