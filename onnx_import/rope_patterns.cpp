#include "onnx_import/rope_patterns.h"

#include <algorithm>
#include <optional>

#include "onnx_import/model_shapes.h"

namespace mugraph::onnx_import {
namespace {

using graph::Dims;
using graph::OpKind;

// A Slice over the last axis of its input with constant bounds: the elements start,
// start + step, ... below end, bounds clamped as ONNX does for a positive step.
struct LastAxisSlice {
  int64_t start = 0;
  int64_t end = 0;
  int64_t step = 1;
  bool operator==(const LastAxisSlice&) const = default;
};

std::optional<LastAxisSlice> lastAxisSlice(const Model& model, const Node& slice) {
  if (slice.op != "Slice" || !slice.domain.empty() || slice.inputs.size() < 4) return std::nullopt;
  const std::optional<Dims>& shape = model.values.at(slice.inputs[0]).shape;
  if (!shape || shape->empty()) return std::nullopt;
  auto constant = [&](size_t i) -> std::optional<double> {
    if (i >= slice.inputs.size() || slice.inputs[i].empty()) return std::nullopt;
    const auto c = model.constants.find(slice.inputs[i]);
    if (c == model.constants.end() || c->second.values.size() != 1) return std::nullopt;
    return c->second.values[0];
  };
  const std::optional<double> start = constant(1), end = constant(2), axis = constant(3);
  const std::optional<double> step = slice.inputs.size() > 4 ? constant(4) : 1.0;
  if (!start || !end || !axis || !step || *step < 1.0) return std::nullopt;
  const std::optional<int> a = normalizeAxis(static_cast<int64_t>(*axis), shape->size());
  if (!a || *a + 1 != static_cast<int>(shape->size())) return std::nullopt;
  const double n = static_cast<double>(shape->back());
  auto clamp = [n](double v) {
    return static_cast<int64_t>(std::clamp(v < 0 ? v + n : v, 0.0, n));
  };
  return LastAxisSlice{clamp(*start), clamp(*end), static_cast<int64_t>(*step)};
}

// Whether the slice takes exactly the elements first, first + step, ... of a last axis of n
// (its end anywhere past the last of them).
bool takesEvery(const std::optional<LastAxisSlice>& slice, int64_t first, int64_t step, int64_t n) {
  if (!slice || slice->start != first || slice->step != step) return false;
  const int64_t last = first + step * ((n - 1 - first) / step);
  return slice->end > last && slice->end <= last + step;
}

int readersOf(const Model& model, const std::string& value) {
  int count =
      static_cast<int>(std::count(model.graphOutputs.begin(), model.graphOutputs.end(), value));
  for (const Node& n : model.nodes) {
    count += static_cast<int>(std::count(n.inputs.begin(), n.inputs.end(), value));
  }
  return count;
}

// The node computing input `i` of `node` when it is an op of `op` (default domain); else -1.
int producerAs(const Model& model, const Node& node, size_t i, const std::string& op) {
  if (i >= node.inputs.size() || node.inputs[i].empty()) return -1;
  const int p = model.producerOf(node.inputs[i]);
  if (p < 0 || model.nodes[p].op != op || !model.nodes[p].domain.empty() ||
      model.nodes[p].inputs.empty() || model.nodes[p].outputs.size() != 1) {
    return -1;
  }
  return p;
}

// x, with a known shape whose last axis (of even size) is rotated, and a float type.
bool rotatable(const Model& model, const std::string& x) {
  const Value& v = model.values.at(x);
  return v.shape && !v.shape->empty() && v.dtype && v.shape->back() % 2 == 0;
}

// Concat(Neg(Slice(x, h:2h)), Slice(x, 0:h)) on the last axis, with Concat at `index`.
std::optional<RotationPattern> matchRotateHalf(const Model& model, int index) {
  const Node& c = model.nodes[index];
  if (c.op != "Concat" || !c.domain.empty() || c.inputs.size() != 2) return std::nullopt;
  const int neg = producerAs(model, c, 0, "Neg");
  if (neg < 0) return std::nullopt;
  const int high = producerAs(model, model.nodes[neg], 0, "Slice");
  const int low = producerAs(model, c, 1, "Slice");
  if (high < 0 || low < 0) return std::nullopt;
  const std::string& x = model.nodes[low].inputs[0];
  if (model.nodes[high].inputs[0] != x || !rotatable(model, x)) return std::nullopt;
  const Dims& shape = *model.values.at(x).shape;
  const std::optional<int> axis = normalizeAxis(c.intAttr("axis", 0), shape.size());
  if (!axis || *axis + 1 != static_cast<int>(shape.size())) return std::nullopt;
  const int64_t n = shape.back(), h = n / 2;
  if (lastAxisSlice(model, model.nodes[low]) != LastAxisSlice{0, h, 1} ||
      lastAxisSlice(model, model.nodes[high]) != LastAxisSlice{h, n, 1}) {
    return std::nullopt;
  }
  // Each part read only by the pattern, so mapping it whole changes no other reader.
  if (readersOf(model, c.inputs[0]) != 1 || readersOf(model, c.inputs[1]) != 1 ||
      readersOf(model, model.nodes[neg].inputs[0]) != 1) {
    return std::nullopt;
  }
  return RotationPattern{OpKind::RotateHalf, x, {neg, high, low}};
}

// An Unsqueeze or Reshape at input `i` of `node` whose result is its input with a last axis of
// 1 appended (the stack's new axis); -1 for anything else.
int appendsUnitAxis(const Model& model, const Node& node, size_t i) {
  for (const char* op : {"Unsqueeze", "Reshape"}) {
    const int p = producerAs(model, node, i, op);
    if (p < 0) continue;
    const std::optional<Dims>& in = model.values.at(model.nodes[p].inputs[0]).shape;
    const std::optional<Dims>& out = model.values.at(model.nodes[p].outputs[0]).shape;
    if (!in || !out || out->size() != in->size() + 1 || out->back() != 1) return -1;
    return std::equal(in->begin(), in->end(), out->begin()) ? p : -1;
  }
  return -1;
}

// Reshape(Concat(Unsqueeze(Neg(Slice(x, 1::2))), Unsqueeze(Slice(x, 0::2)), axis=-1)) back to
// x's shape (or Flatten), with the Reshape at `index`.
std::optional<RotationPattern> matchRotatePairs(const Model& model, int index) {
  const Node& head = model.nodes[index];
  if ((head.op != "Reshape" && head.op != "Flatten") || !head.domain.empty() ||
      head.outputs.size() != 1) {
    return std::nullopt;
  }
  const int concat = producerAs(model, head, 0, "Concat");
  if (concat < 0 || model.nodes[concat].inputs.size() != 2) return std::nullopt;
  const Node& c = model.nodes[concat];
  const int oddAxis = appendsUnitAxis(model, c, 0);
  const int evenAxis = appendsUnitAxis(model, c, 1);
  if (oddAxis < 0 || evenAxis < 0) return std::nullopt;
  const int neg = producerAs(model, model.nodes[oddAxis], 0, "Neg");
  if (neg < 0) return std::nullopt;
  const int odd = producerAs(model, model.nodes[neg], 0, "Slice");
  const int even = producerAs(model, model.nodes[evenAxis], 0, "Slice");
  if (odd < 0 || even < 0) return std::nullopt;
  const std::string& x = model.nodes[even].inputs[0];
  if (model.nodes[odd].inputs[0] != x || !rotatable(model, x)) return std::nullopt;
  const Dims& shape = *model.values.at(x).shape;
  const std::optional<int> axis = normalizeAxis(c.intAttr("axis", 0), shape.size() + 1);
  if (!axis || *axis != static_cast<int>(shape.size())) return std::nullopt;
  const int64_t n = shape.back();
  if (!takesEvery(lastAxisSlice(model, model.nodes[even]), 0, 2, n) ||
      !takesEvery(lastAxisSlice(model, model.nodes[odd]), 1, 2, n)) {
    return std::nullopt;
  }
  if (model.values.at(head.outputs[0]).shape != shape) return std::nullopt;
  // Each part read only by the pattern, as for rotate_half.
  const std::vector<int> parts{odd, neg, oddAxis, even, evenAxis, concat};
  for (int p : parts) {
    if (readersOf(model, model.nodes[p].outputs[0]) != 1) return std::nullopt;
  }
  return RotationPattern{OpKind::RotatePairs, x, parts};
}

}  // namespace

std::map<int, RotationPattern> findRotations(const Model& model) {
  std::map<int, RotationPattern> found;
  for (size_t index = 0; index < model.nodes.size(); ++index) {
    const int i = static_cast<int>(index);
    std::optional<RotationPattern> match = matchRotateHalf(model, i);
    if (!match) match = matchRotatePairs(model, i);
    if (match) found.emplace(i, std::move(*match));
  }
  return found;
}

}  // namespace mugraph::onnx_import
