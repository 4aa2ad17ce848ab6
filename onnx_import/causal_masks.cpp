#include "onnx_import/causal_masks.h"

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "onnx_import/constant_eval.h"
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
    if (!node.domain.empty() || node.outputs.size() != 1) return false;
    if (node.op == "Softmax") {
      // Before a computed mask is shaped (shapeComputedMasks), only axis -1 is known last.
      const int64_t given = node.intAttr("axis", -1);
      const std::optional<int> axis = shape ? normalizeAxis(given, shape->size()) : std::nullopt;
      if (shape ? !axis || *axis + 1 != static_cast<int>(shape->size()) : given != -1) {
        return false;
      }
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

// A mask the graph computes from constants alone (constant_eval.h), evaluated and checked.
// A mask the graph computes from constants alone (constant_eval.h), evaluated, with its
// pattern where its values are causal (read against the scores' dtype where its own is unknown).
std::optional<std::pair<CausalPattern, Evaluated>> computedMask(const Model& model,
                                                                const std::string& value,
                                                                const Value& scores) {
  if (model.producerOf(value) < 0 || !scores.dtype) return std::nullopt;
  std::optional<Evaluated> evaluated = evaluateConstant(model, value);
  if (!evaluated) return std::nullopt;
  const Constant* c = &evaluated->value;
  if (graph::checkedElementCount(c->shape) != static_cast<int64_t>(c->values.size())) {
    return std::nullopt;
  }
  const std::optional<graph::DType>& own = model.values.at(value).dtype;
  const std::function<double(int64_t)> at = [c](int64_t i) {
    return c->values[static_cast<size_t>(i)];
  };
  const std::optional<CausalPattern> p =
      causalPattern(c->shape, at, lowestFinite(own ? *own : *scores.dtype));
  if (!p) return std::nullopt;
  return std::pair{*p, std::move(*evaluated)};
}

void evaluateMask(const Model& model, const std::string& value, const Value& scores,
                  std::map<std::string, CausalPattern>& masks, std::set<int>& computing) {
  if (masks.count(value)) return;
  if (const auto mask = computedMask(model, value, scores)) {
    masks[value] = mask->first;
    computing.insert(mask->second.nodes.begin(), mask->second.nodes.end());
  }
}

std::optional<CausalAdd> causalAdd(const Model& model, const Node& node,
                                   std::map<std::string, CausalPattern>& masks,
                                   std::set<int>& computing) {
  if (node.op != "Add" || !node.domain.empty() || node.inputs.size() != 2 ||
      node.outputs.size() != 1 || !onlySoftmaxReads(model, node.outputs[0])) {
    return std::nullopt;
  }
  for (int m = 0; m < 2; ++m) {
    evaluateMask(model, node.inputs[m], model.values.at(node.inputs[1 - m]), masks, computing);
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
    return CausalAdd{m, mask->first, mask->second.queries};
  }
  return std::nullopt;
}

}  // namespace

void shapeComputedMasks(Model& model) {
  bool shaped = false;
  for (const Node& node : model.nodes) {
    if (node.op != "Add" || !node.domain.empty() || node.inputs.size() != 2 ||
        node.outputs.size() != 1 || !onlySoftmaxReads(model, node.outputs[0])) {
      continue;
    }
    for (int m = 0; m < 2; ++m) {
      const std::string& operand = node.inputs[m];
      if (model.values.at(operand).shape) continue;
      const auto mask = computedMask(model, operand, model.values.at(node.inputs[1 - m]));
      if (!mask) continue;  // any other mask stays as shape inference leaves it
      for (const auto& [value, shape] : mask->second.shapes) {
        Value& v = model.values[value];
        if (v.shape) continue;
        v.shape = shape;
        v.whyNoShape.clear();
        shaped = true;
      }
    }
  }
  if (shaped) inferShapes(model);
}

CausalMasks findCausalMasks(const Model& model) {
  std::map<std::string, CausalPattern> masks = maskValues(model);
  CausalMasks found;
  std::set<int> computing;  // nodes of masks computed from constants
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    if (std::optional<CausalAdd> add = causalAdd(model, model.nodes[n], masks, computing)) {
      found.adds[static_cast<int>(n)] = *add;
    }
  }
  // From the last node back, so a node's readers are decided before it.
  for (size_t n = model.nodes.size(); n-- > 0;) {
    const Node& node = model.nodes[n];
    if (node.outputs.size() != 1 ||
        (!masks.count(node.outputs[0]) && !computing.count(static_cast<int>(n))) ||
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
