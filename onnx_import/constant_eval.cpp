#include "onnx_import/constant_eval.h"

#include <cmath>
#include <functional>
#include <map>
#include <vector>

#include "onnx_import/model_shapes.h"

namespace mugraph::onnx_import {
namespace {

using graph::Dims;

std::optional<int64_t> countOf(const Dims& shape) {
  const std::optional<int64_t> n = graph::checkedElementCount(shape);
  if (!n || *n > kMaxEvaluatedElements) return std::nullopt;
  return n;
}

// Element `i` of the broadcast result of shape `out` read from an operand of shape `in`.
int64_t broadcastIndex(int64_t i, const Dims& out, const Dims& in) {
  int64_t index = 0, stride = 1;
  for (size_t d = 0; d < out.size(); ++d) {
    const size_t od = out.size() - 1 - d;
    const int64_t coordinate = i % out[od];
    i /= out[od];
    if (d < in.size()) {
      const int64_t extent = in[in.size() - 1 - d];
      if (extent != 1) index += coordinate * stride;
      stride *= extent;
    }
  }
  return index;
}

std::optional<Constant> elementwise(const std::vector<const Constant*>& in,
                                    const std::function<double(const std::vector<double>&)>& f) {
  Dims shape = in[0]->shape;
  for (size_t k = 1; k < in.size(); ++k) {
    const std::optional<Dims> b = broadcastShapes(shape, in[k]->shape);
    if (!b) return std::nullopt;
    shape = *b;
  }
  const std::optional<int64_t> n = countOf(shape);
  if (!n) return std::nullopt;
  Constant out{shape, {}};
  out.values.reserve(static_cast<size_t>(*n));
  std::vector<double> args(in.size());
  for (int64_t i = 0; i < *n; ++i) {
    for (size_t k = 0; k < in.size(); ++k) {
      args[k] = in[k]->values[static_cast<size_t>(broadcastIndex(i, shape, in[k]->shape))];
    }
    out.values.push_back(f(args));
  }
  return out;
}

double truth(bool b) {
  return b ? 1.0 : 0.0;
}

const std::map<std::string, std::function<double(const std::vector<double>&)>>& kernels() {
  using V = const std::vector<double>&;
  static const std::map<std::string, std::function<double(V)>> table = {
      {"Add", [](V a) { return a[0] + a[1]; }},
      {"Sub", [](V a) { return a[0] - a[1]; }},
      {"Mul", [](V a) { return a[0] * a[1]; }},
      {"Equal", [](V a) { return truth(a[0] == a[1]); }},
      {"Less", [](V a) { return truth(a[0] < a[1]); }},
      {"LessOrEqual", [](V a) { return truth(a[0] <= a[1]); }},
      {"Greater", [](V a) { return truth(a[0] > a[1]); }},
      {"GreaterOrEqual", [](V a) { return truth(a[0] >= a[1]); }},
      {"And", [](V a) { return truth(a[0] != 0 && a[1] != 0); }},
      {"Or", [](V a) { return truth(a[0] != 0 || a[1] != 0); }},
      {"Where", [](V a) { return a[0] != 0 ? a[1] : a[2]; }},
      {"Not", [](V a) { return truth(a[0] == 0); }},
      {"Neg", [](V a) { return -a[0]; }},
  };
  return table;
}

// Cast's `to`: a float of 16 bits overflows to infinity past its largest finite value (the f32
// lowest value a mask may hold becomes -inf in f16); integers truncate; bool is v != 0.
double castTo(double v, int64_t to) {
  constexpr int64_t kBool = 9, kF16 = 10, kBf16 = 16, kF32 = 1, kF64 = 11;
  if (to == kBool) return truth(v != 0);
  if (to == kF16 && std::fabs(v) > 65504.0) return std::copysign(INFINITY, v);
  if (to == kBf16 && std::fabs(v) > 3.3895313892515355e38) return std::copysign(INFINITY, v);
  if (to == kF16 || to == kBf16 || to == kF32 || to == kF64 || std::isinf(v) || std::isnan(v)) {
    return v;
  }
  return std::trunc(v);
}

std::optional<double> scalar(const Constant& c) {
  if (c.values.size() != 1) return std::nullopt;
  return c.values[0];
}

std::optional<Dims> dimsOf(const Constant& c) {
  Dims dims;
  for (double v : c.values) {
    if (!(v >= 0 && v <= double(kMaxEvaluatedElements)) || v != std::floor(v)) return std::nullopt;
    dims.push_back(static_cast<int64_t>(v));
  }
  return dims;
}

std::optional<Constant> range(const std::vector<const Constant*>& in) {
  const std::optional<double> start = scalar(*in[0]), limit = scalar(*in[1]),
                              delta = scalar(*in[2]);
  if (!start || !limit || !delta || *delta == 0) return std::nullopt;
  const double n = std::max(std::ceil((*limit - *start) / *delta), 0.0);
  if (!(n <= double(kMaxEvaluatedElements))) return std::nullopt;
  Constant out{{static_cast<int64_t>(n)}, {}};
  for (int64_t i = 0; i < out.shape[0]; ++i) out.values.push_back(*start + double(i) * *delta);
  return out;
}

std::optional<Constant> trilu(const Node& node, const std::vector<const Constant*>& in) {
  const Constant& x = *in[0];
  if (x.shape.size() < 2) return std::nullopt;
  std::optional<double> k = 0.0;
  if (in.size() > 1) k = scalar(*in[1]);
  if (!k) return std::nullopt;
  const bool upper = node.intAttr("upper", 1) != 0;
  const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  Constant out = x;
  for (size_t i = 0; i < out.values.size(); ++i) {
    const int64_t r = (static_cast<int64_t>(i) / cols) % rows, c = static_cast<int64_t>(i) % cols;
    const bool keep = upper ? double(c - r) >= *k : double(c - r) <= *k;
    if (!keep) out.values[i] = 0.0;
  }
  return out;
}

// Squeeze (`squeeze`) or Unsqueeze of `in` along the node's axes.
std::optional<Dims> squeezed(const Model& model, const Node& node, Dims in, bool squeeze) {
  const std::optional<std::vector<int64_t>> axes = axesOf(model, node);
  if (!axes) return std::nullopt;
  if (squeeze) {
    Dims out;
    for (size_t d = 0; d < in.size(); ++d) {
      bool drop = axes->empty() && in[d] == 1;
      for (int64_t a : *axes) {
        drop = drop || normalizeAxis(a, in.size()) == static_cast<int>(d);
      }
      if (!drop) out.push_back(in[d]);
    }
    return out;
  }
  const size_t rank = in.size() + axes->size();
  Dims out(rank, -1);
  for (int64_t a : *axes) {
    const std::optional<int> d = normalizeAxis(a, rank);
    if (!d || out[*d] != -1) return std::nullopt;
    out[*d] = 1;
  }
  size_t next = 0;
  for (int64_t& d : out) {
    if (d == -1) d = in.at(next++);
  }
  return out;
}

class Evaluator {
 public:
  Evaluator(const Model& model, std::set<int>& nodes) : model_(model), nodes_(nodes) {}

  const Constant* value(const std::string& name) {
    if (const auto c = model_.constants.find(name); c != model_.constants.end()) return &c->second;
    if (const auto c = model_.maskOperands.find(name); c != model_.maskOperands.end()) {
      return &c->second;
    }
    if (const auto done = memo_.find(name); done != memo_.end()) {
      return done->second ? &*done->second : nullptr;
    }
    memo_[name] = std::nullopt;  // a cycle in a corrupted model evaluates to nothing
    const int p = model_.producerOf(name);
    if (p < 0 || model_.nodes[p].outputs.size() != 1 || !model_.nodes[p].domain.empty()) {
      return nullptr;
    }
    std::optional<Constant> result = node(model_.nodes[p]);
    if (!result) return nullptr;
    nodes_.insert(p);
    memo_[name] = std::move(result);
    return &*memo_[name];
  }

 private:
  std::optional<Constant> node(const Node& n) {
    std::vector<const Constant*> in;
    for (const std::string& i : n.inputs) {
      if (i.empty()) continue;
      const Constant* c = value(i);
      if (!c) return std::nullopt;
      in.push_back(c);
    }
    const std::string& op = n.op;
    if (const auto k = kernels().find(op); k != kernels().end()) {
      const size_t arity = op == "Where" ? 3 : (op == "Not" || op == "Neg") ? 1 : 2;
      if (in.size() != arity) return std::nullopt;
      return elementwise(in, k->second);
    }
    if (in.empty()) return std::nullopt;
    if (op == "Identity") return *in[0];
    if (op == "Cast") {
      Constant out = *in[0];
      for (double& v : out.values) v = castTo(v, n.intAttr("to", 1));
      return out;
    }
    if (op == "Range" && in.size() == 3) return range(in);
    if (op == "Trilu") return trilu(n, in);
    std::optional<Dims> shape;
    if (op == "Reshape" && in.size() == 2) shape = reshapeShape(in[0]->shape, *in[1]);
    if (op == "Unsqueeze" || op == "Squeeze") {
      shape = squeezed(model_, n, in[0]->shape, op == "Squeeze");
    }
    if (shape) return Constant{*shape, in[0]->values};
    if (op == "Expand" && in.size() == 2) {
      const std::optional<Dims> target = dimsOf(*in[1]);
      const std::optional<Dims> out = target ? broadcastShapes(in[0]->shape, *target) : target;
      const std::optional<int64_t> count = out ? countOf(*out) : std::nullopt;
      if (!count) return std::nullopt;
      Constant expanded{*out, {}};
      for (int64_t i = 0; i < *count; ++i) {
        expanded.values.push_back(
            in[0]->values[static_cast<size_t>(broadcastIndex(i, *out, in[0]->shape))]);
      }
      return expanded;
    }
    if (op == "ConstantOfShape") {
      const std::optional<Dims> dims = dimsOf(*in[0]);
      const std::optional<int64_t> count = dims ? countOf(*dims) : std::nullopt;
      if (!count) return std::nullopt;
      const auto fill = n.attributes.find("value");
      const double v = fill != n.attributes.end() && fill->second.tensor &&
                               fill->second.tensor->values.size() == 1
                           ? fill->second.tensor->values[0]
                           : 0.0;
      return Constant{*dims, std::vector<double>(static_cast<size_t>(*count), v)};
    }
    return std::nullopt;
  }

  const Model& model_;
  std::set<int>& nodes_;
  std::map<std::string, std::optional<Constant>> memo_;
};

}  // namespace

std::optional<Evaluated> evaluateConstant(const Model& model, const std::string& value) {
  Evaluated result;
  Evaluator evaluator(model, result.nodes);
  const Constant* c = evaluator.value(value);
  if (!c) return std::nullopt;
  result.value = *c;
  for (int n : result.nodes) {
    const std::string& out = model.nodes[n].outputs[0];
    result.shapes[out] = evaluator.value(out)->shape;
  }
  return result;
}

}  // namespace mugraph::onnx_import
