#include "onnx_import/model_shapes.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace mugraph::onnx_import {
namespace {

using graph::Dims;

// Larger computed constants are data, not shapes: never folded.
constexpr int64_t kMaxFolded = 64;

std::optional<Dims> inferNode(const Model& model, const Node& node);

// A constant's value (a double read from the file) as a dim or an index: nullopt unless it is
// a whole number of at most 2^40 in magnitude, so a NaN or a huge value never converts.
std::optional<int64_t> wholeNumber(double value) {
  constexpr double kLimit = double(int64_t{1} << 40);
  if (!(value >= -kLimit && value <= kLimit) || value != std::floor(value)) return std::nullopt;
  return static_cast<int64_t>(value);
}

const Constant* constantInput(const Model& model, const Node& node, size_t index) {
  if (index >= node.inputs.size()) return nullptr;
  const auto found = model.constants.find(node.inputs[index]);
  return found == model.constants.end() ? nullptr : &found->second;
}

std::optional<Dims> shapeOf(const Model& model, const std::string& value) {
  const auto found = model.values.find(value);
  if (found == model.values.end()) return std::nullopt;
  return found->second.shape;
}

std::optional<Dims> matmulShape(Dims a, Dims b) {
  if (a.empty() || b.empty()) return std::nullopt;
  const bool vectorA = a.size() == 1, vectorB = b.size() == 1;
  if (vectorA) a.insert(a.begin(), 1);
  if (vectorB) b.push_back(1);
  if (a.back() != b[b.size() - 2]) return std::nullopt;
  const std::optional<Dims> batch =
      broadcastShapes(Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2));
  if (!batch) return std::nullopt;
  Dims out = *batch;
  if (!vectorA) out.push_back(a[a.size() - 2]);
  if (!vectorB) out.push_back(b.back());
  return out;
}

std::optional<Dims> reduceShape(const Model& model, const Node& node, const Dims& in) {
  std::optional<std::vector<int64_t>> axes = axesOf(model, node);
  if (!axes) return std::nullopt;
  std::set<int> reduced;
  if (axes->empty()) {
    if (node.intAttr("noop_with_empty_axes", 0)) return in;
    for (size_t d = 0; d < in.size(); ++d) reduced.insert(static_cast<int>(d));
  }
  for (int64_t a : *axes) {
    const std::optional<int> axis = normalizeAxis(a, in.size());
    if (!axis) return std::nullopt;
    reduced.insert(*axis);
  }
  const bool keep = node.intAttr("keepdims", 1) != 0;
  Dims out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced.count(static_cast<int>(d)))
      out.push_back(in[d]);
    else if (keep)
      out.push_back(1);
  }
  return out;
}

std::optional<Dims> unsqueezeShape(const Model& model, const Node& node, const Dims& in) {
  std::optional<std::vector<int64_t>> axes = axesOf(model, node);
  if (!axes) return std::nullopt;
  const size_t rank = in.size() + axes->size();
  std::set<int> inserted;
  for (int64_t a : *axes) {
    const std::optional<int> axis = normalizeAxis(a, rank);
    if (!axis) return std::nullopt;
    inserted.insert(*axis);
  }
  Dims out;
  size_t next = 0;
  for (size_t d = 0; d < rank; ++d)
    out.push_back(inserted.count(static_cast<int>(d)) ? 1 : in.at(next++));
  return out;
}

std::optional<Dims> squeezeShape(const Model& model, const Node& node, const Dims& in) {
  std::optional<std::vector<int64_t>> axes = axesOf(model, node);
  std::set<int> removed;
  if (axes && !axes->empty()) {
    for (int64_t a : *axes) {
      const std::optional<int> axis = normalizeAxis(a, in.size());
      if (!axis || in[*axis] != 1) return std::nullopt;
      removed.insert(*axis);
    }
  } else if (node.inputs.size() > 1 && !node.inputs[1].empty()) {
    return std::nullopt;  // axes computed at run time
  } else {
    for (size_t d = 0; d < in.size(); ++d) {
      if (in[d] == 1) removed.insert(static_cast<int>(d));
    }
  }
  Dims out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!removed.count(static_cast<int>(d))) out.push_back(in[d]);
  }
  return out;
}

std::optional<Dims> sliceShape(const Model& model, const Node& node, Dims in) {
  const Constant* starts = constantInput(model, node, 1);
  const Constant* ends = constantInput(model, node, 2);
  const Constant* axes =
      node.inputs.size() > 3 && !node.inputs[3].empty() ? constantInput(model, node, 3) : nullptr;
  const Constant* steps =
      node.inputs.size() > 4 && !node.inputs[4].empty() ? constantInput(model, node, 4) : nullptr;
  if (!starts || !ends || starts->values.size() != ends->values.size()) return std::nullopt;
  if ((node.inputs.size() > 3 && !node.inputs[3].empty() && !axes) ||
      (node.inputs.size() > 4 && !node.inputs[4].empty() && !steps)) {
    return std::nullopt;
  }
  for (size_t i = 0; i < starts->values.size(); ++i) {
    const std::optional<int64_t> a =
        axes ? wholeNumber(axes->values.at(i)) : static_cast<int64_t>(i);
    if (!a) return std::nullopt;
    const std::optional<int> normalized = normalizeAxis(*a, in.size());
    const std::optional<int64_t> step = steps ? wholeNumber(steps->values.at(i)) : 1;
    if (!normalized || !step || *step == 0) return std::nullopt;
    if (std::isnan(starts->values[i]) || std::isnan(ends->values[i])) return std::nullopt;
    const int axis = normalized.value();
    const int64_t n = in[axis];
    auto clampIndex = [&](double v, int64_t lo, int64_t hi) {
      int64_t x = v >= 9.2e18 ? hi : v <= -9.2e18 ? lo : static_cast<int64_t>(v);
      if (x < 0) x += n;
      return std::clamp(x, lo, hi);
    };
    const int64_t begin =
        *step > 0 ? clampIndex(starts->values[i], 0, n) : clampIndex(starts->values[i], -1, n - 1);
    const int64_t end =
        *step > 0 ? clampIndex(ends->values[i], 0, n) : clampIndex(ends->values[i], -1, n - 1);
    const int64_t count =
        *step > 0 ? (end - begin + *step - 1) / *step : (begin - end - *step - 1) / -*step;
    in[axis] = std::max<int64_t>(0, count);
  }
  return in;
}

std::optional<Dims> inferNode(const Model& model, const Node& node) {
  std::vector<std::optional<Dims>> in;
  for (const std::string& name : node.inputs)
    in.push_back(name.empty() ? std::nullopt : shapeOf(model, name));
  auto known = [&](size_t i) { return i < in.size() && in[i].has_value(); };
  const std::string& op = node.op;
  static const std::set<std::string> sameShape = {
      "Exp",  "Sqrt", "Sigmoid", "Reciprocal", "Neg", "Cast",    "Identity",           "Softmax",
      "Relu", "Tanh", "Erf",     "Log",        "Abs", "Dropout", "LayerNormalization", "Gelu"};
  static const std::set<std::string> broadcasting = {"Add",   "Sub",  "Mul",     "Div", "Pow",
                                                     "Equal", "Less", "Greater", "Max", "Min"};
  if (sameShape.count(op)) return known(0) ? in[0] : std::nullopt;
  if (broadcasting.count(op)) {
    return known(0) && known(1) ? broadcastShapes(*in[0], *in[1]) : std::nullopt;
  }
  if (op == "Where" && known(0) && known(1) && known(2)) {
    const std::optional<Dims> ab = broadcastShapes(*in[1], *in[2]);
    return ab ? broadcastShapes(*in[0], *ab) : std::nullopt;
  }
  if (op == "MatMul" && known(0) && known(1)) return matmulShape(*in[0], *in[1]);
  if (op == "Gemm" && known(0) && known(1) && in[0]->size() == 2 && in[1]->size() == 2) {
    const int64_t m = node.intAttr("transA", 0) ? (*in[0])[1] : (*in[0])[0];
    const int64_t n = node.intAttr("transB", 0) ? (*in[1])[0] : (*in[1])[1];
    return Dims{m, n};
  }
  if (op.rfind("Reduce", 0) == 0 && known(0)) return reduceShape(model, node, *in[0]);
  if (op == "Reshape" && known(0)) {
    const Constant* target = constantInput(model, node, 1);
    return target ? reshapeShape(*in[0], *target) : std::nullopt;
  }
  if (op == "Unsqueeze" && known(0)) return unsqueezeShape(model, node, *in[0]);
  if (op == "Squeeze" && known(0)) return squeezeShape(model, node, *in[0]);
  if (op == "Flatten" && known(0)) {
    const std::optional<int> axis = normalizeAxis(node.intAttr("axis", 1), in[0]->size() + 1);
    if (!axis) return std::nullopt;
    const Dims& s = *in[0];
    const std::optional<int64_t> outer =
        graph::checkedElementCount(Dims(s.begin(), s.begin() + *axis));
    const std::optional<int64_t> inner =
        graph::checkedElementCount(Dims(s.begin() + *axis, s.end()));
    if (!outer || !inner) return std::nullopt;
    return Dims{*outer, *inner};
  }
  if (op == "Transpose" && known(0)) {
    std::optional<std::vector<int64_t>> perm = node.intsAttr("perm");
    const Dims& s = *in[0];
    Dims out(s.rbegin(), s.rend());
    if (perm && !perm->empty()) {
      if (perm->size() != s.size()) return std::nullopt;
      for (size_t d = 0; d < s.size(); ++d) {
        if ((*perm)[d] < 0 || (*perm)[d] >= static_cast<int64_t>(s.size())) return std::nullopt;
        out[d] = s[(*perm)[d]];
      }
    }
    return out;
  }
  if (op == "Expand" && known(0)) {
    const Constant* target = constantInput(model, node, 1);
    if (!target) return std::nullopt;
    Dims shape;
    for (double v : target->values) {
      const std::optional<int64_t> dim = wholeNumber(v);
      if (!dim || *dim < 0) return std::nullopt;
      shape.push_back(*dim);
    }
    return broadcastShapes(*in[0], shape);
  }
  if (op == "Tile" && known(0)) {
    const Constant* repeats = constantInput(model, node, 1);
    if (!repeats || repeats->values.size() != in[0]->size()) return std::nullopt;
    Dims out = *in[0];
    for (size_t d = 0; d < out.size(); ++d) {
      const std::optional<int64_t> times = wholeNumber(repeats->values[d]);
      if (!times || *times < 0 || __builtin_mul_overflow(out[d], *times, &out[d])) {
        return std::nullopt;
      }
    }
    return out;
  }
  if (op == "Concat" && known(0)) {
    const std::optional<int> axis = normalizeAxis(node.intAttr("axis", 0), in[0]->size());
    if (!axis) return std::nullopt;
    Dims out = *in[0];
    for (size_t i = 1; i < in.size(); ++i) {
      if (!known(i) || in[i]->size() != out.size()) return std::nullopt;
      if (__builtin_add_overflow(out[*axis], (*in[i])[*axis], &out[*axis])) return std::nullopt;
    }
    return out;
  }
  if (op == "Slice" && known(0)) return sliceShape(model, node, *in[0]);
  return std::nullopt;
}

// Exporters compute target shapes with small integer graphs (Shape, ConstantOfShape, Equal,
// Where, Gather, Concat). Folding those whose inputs are all known makes the shapes of the
// Expand and Reshape nodes they feed static.
std::optional<Constant> foldNode(const Model& model, const Node& node) {
  const std::string& op = node.op;
  if (op == "Shape") {
    const std::optional<Dims> in = shapeOf(model, node.inputs.at(0));
    if (!in) return std::nullopt;
    Constant c{{static_cast<int64_t>(in->size())}, {}};
    const auto r = static_cast<int64_t>(in->size());
    int64_t start = node.intAttr("start", 0), end = node.intAttr("end", r);
    start = std::clamp(start < 0 ? start + r : start, int64_t{0}, r);
    end = std::clamp(end < 0 ? end + r : end, int64_t{0}, r);
    for (int64_t d = start; d < end; ++d) c.values.push_back(static_cast<double>((*in)[d]));
    c.shape = {static_cast<int64_t>(c.values.size())};
    return c;
  }
  std::vector<const Constant*> in;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Constant* c = constantInput(model, node, i);
    if (!c) return std::nullopt;
    in.push_back(c);
  }
  if (in.empty()) return std::nullopt;
  if (op == "ConstantOfShape") {
    Constant c;
    for (double v : in[0]->values) {
      const std::optional<int64_t> dim = wholeNumber(v);
      if (!dim || *dim < 0) return std::nullopt;
      c.shape.push_back(*dim);
    }
    const std::optional<int64_t> count = graph::checkedElementCount(c.shape);
    if (!count || *count > kMaxFolded) return std::nullopt;
    const int64_t n = *count;
    // The fill value is a one-element tensor attribute, 0 where absent.
    const auto found = node.attributes.find("value");
    const bool given = found != node.attributes.end() && found->second.tensor &&
                       found->second.tensor->values.size() == 1;
    c.values.assign(n, given ? found->second.tensor->values[0] : 0.0);
    return c;
  }
  if (op == "Identity" || op == "Cast" || op == "Unsqueeze" || op == "Squeeze" || op == "Reshape") {
    Constant c = *in[0];
    const std::optional<Dims> shape = inferNode(model, node);
    if (shape) c.shape = *shape;
    return c;
  }
  if (op == "Concat") {
    Constant c{{0}, {}};
    for (const Constant* part : in)
      c.values.insert(c.values.end(), part->values.begin(), part->values.end());
    c.shape = {static_cast<int64_t>(c.values.size())};
    return c;
  }
  if (op == "Gather" && in[0]->shape.size() == 1) {
    Constant c{in[1]->shape, {}};
    for (double i : in[1]->values) {
      const std::optional<int64_t> index = wholeNumber(i);
      if (!index) return std::nullopt;
      int64_t k = *index;
      if (k < 0) k += static_cast<int64_t>(in[0]->values.size());
      if (k < 0 || k >= static_cast<int64_t>(in[0]->values.size())) return std::nullopt;
      c.values.push_back(in[0]->values[k]);
    }
    return c;
  }
  const bool elementwise =
      op == "Equal" || op == "Where" || op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
  if (!elementwise || in.size() != (op == "Where" ? 3u : 2u)) return std::nullopt;
  for (const Constant* c : in) {
    if (c->values.empty()) return std::nullopt;
  }
  size_t n = 1;
  Dims shape;
  for (const Constant* c : in) {
    if (c->values.size() > 1) {
      if (n > 1 && c->values.size() != n) return std::nullopt;
      n = c->values.size();
      shape = c->shape;
    }
  }
  auto at = [&](size_t input, size_t i) {
    return in[input]->values.size() == 1 ? in[input]->values[0] : in[input]->values[i];
  };
  Constant c{shape, {}};
  for (size_t i = 0; i < n; ++i) {
    const double a = at(0, i), b = in.size() > 1 ? at(1, i) : 0.0;
    double v = 0;
    if (op == "Equal")
      v = a == b ? 1.0 : 0.0;
    else if (op == "Where")
      v = a != 0.0 ? b : at(2, i);
    else if (op == "Add")
      v = a + b;
    else if (op == "Sub")
      v = a - b;
    else if (op == "Mul")
      v = a * b;
    else if (b == 0.0)
      return std::nullopt;
    else
      v = node.inputs.size() == 2 && model.values.at(node.outputs[0]).dtype ? a / b
                                                                            : std::trunc(a / b);
    c.values.push_back(v);
  }
  return c;
}

}  // namespace

std::optional<Dims> reshapeShape(const Dims& in, const Constant& target) {
  Dims out;
  int inferred = -1;
  for (size_t i = 0; i < target.values.size(); ++i) {
    const std::optional<int64_t> whole = wholeNumber(target.values[i]);
    if (!whole || *whole < -1) return std::nullopt;
    const int64_t v = *whole;
    if (v == -1) {
      if (inferred >= 0) return std::nullopt;
      inferred = static_cast<int>(i);
      out.push_back(1);
    } else if (v == 0) {
      if (i >= in.size()) return std::nullopt;
      out.push_back(in[i]);
    } else {
      out.push_back(v);
    }
  }
  const std::optional<int64_t> total = graph::checkedElementCount(in);
  const std::optional<int64_t> partial = graph::checkedElementCount(out);
  if (!total || !partial) return std::nullopt;
  if (inferred >= 0) {
    if (*partial == 0 || *total % *partial != 0) return std::nullopt;
    out[inferred] = *total / *partial;
  }
  if (graph::checkedElementCount(out) != total) return std::nullopt;
  return out;
}

std::optional<int> normalizeAxis(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

std::optional<Dims> broadcastShapes(const Dims& a, const Dims& b) {
  const size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

std::optional<std::vector<int64_t>> axesOf(const Model& model, const Node& node) {
  if (std::optional<std::vector<int64_t>> attr = node.intsAttr("axes")) return attr;
  if (node.inputs.size() < 2 || node.inputs[1].empty()) return std::vector<int64_t>{};
  const Constant* axes = constantInput(model, node, 1);
  if (!axes) return std::nullopt;
  std::vector<int64_t> out;
  for (double v : axes->values) {
    const std::optional<int64_t> axis = wholeNumber(v);
    if (!axis) return std::nullopt;
    out.push_back(*axis);
  }
  return out;
}

void inferShapes(Model& model) {
  for (const Node& node : model.nodes) {
    if (node.outputs.empty()) continue;
    if (!model.constants.count(node.outputs[0]) && node.op != "Constant") {
      if (std::optional<Constant> folded = foldNode(model, node)) {
        model.constants[node.outputs[0]] = *folded;
        model.folded.insert(node.outputs[0]);
      }
    }
    Value& out = model.values[node.outputs[0]];
    // Where's element type is its second operand's (the first is the condition); a node
    // listed with fewer operands than that takes no type from them.
    const size_t typed = node.op == "Where" ? 1 : 0;
    if (out.elemType.empty() && typed < node.inputs.size() &&
        model.values.count(node.inputs[typed])) {
      const Value& first = model.values.at(node.inputs[typed]);
      out.elemType = first.elemType;
      out.dtype = first.dtype;
    }
    if (node.op == "Cast") {
      const int64_t to = node.intAttr("to", 0);
      out.dtype = to == 10   ? std::optional(graph::DType::F16)
                  : to == 16 ? std::optional(graph::DType::BF16)
                  : to == 1  ? std::optional(graph::DType::F32)
                             : std::nullopt;
      out.elemType =
          out.dtype ? std::string(graph::dtypeName(*out.dtype)) : "type " + std::to_string(to);
    }
    if (out.shape) continue;
    if (std::optional<Dims> shape = inferNode(model, node)) {
      out.shape = shape;
      out.whyNoShape.clear();
    } else if (out.whyNoShape.empty() || out.whyNoShape == "its shape is not in the file") {
      out.whyNoShape = "its shape could not be inferred from " + node.op + " '" + node.name + "'";
    }
  }
}

}  // namespace mugraph::onnx_import
