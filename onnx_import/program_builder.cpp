#include "onnx_import/program_builder.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "graph/builder.h"
#include "graph/shape_inference.h"
#include "onnx_import/model_shapes.h"

namespace mugraph::onnx_import {
namespace {

using graph::Dims;
using graph::OpKind;
using graph::TensorId;

// What an ONNX value is while its program is built: an IR tensor, a scalar constant, or
// factor / denominator waiting for the Mul that makes it a division (the IR has no reciprocal).
struct IrValue {
  TensorId tensor = -1;
  std::optional<double> scalar;
  TensorId denominator = -1;
  double factor = 1.0;
  int reciprocalNode = -1;
  bool readsOutside = false;  // an alias of a value from outside: an input, declared when read
};

IrValue tensorValue(TensorId id) {
  IrValue v;
  v.tensor = id;
  return v;
}

class ProgramBuilder {
 public:
  ProgramBuilder(const Model& model, const std::vector<NodeSupport>& support,
                 const std::vector<int>& nodes, const std::string& name,
                 const std::set<std::string>& readSwapped,
                 const std::map<std::string, Tiling>& tiled)
      : model_(model), support_(support), readSwapped_(readSwapped), tiled_(tiled), builder_(name) {
    for (int n : nodes) {
      for (const std::string& out : model.nodes[n].outputs) inside_.insert(out);
    }
  }

  void map(int index);
  void output(const std::string& value);
  BuiltProgram finish() {
    return {builder_.finish(), std::move(inputs_), std::move(outputs_), std::move(framework_)};
  }

 private:
  [[noreturn]] void fail(const std::string& reason) const { throw BuildFailure(node_, reason); }
  const Node& node() const { return model_.nodes[node_]; }
  const Dims& onnxShape(const std::string& value) const { return *model_.values.at(value).shape; }

  std::optional<double> scalarOf(const std::string& value) const;
  int rankOf(const std::string& value) const;
  TensorId tensor(const std::string& value, int rank);
  TensorId external(const std::string& value, int rank, bool transposeHere = false);
  std::string fresh(const std::string& base);
  TensorId op(OpKind kind, std::vector<TensorId> in, graph::OpAttrs attrs = {},
              const std::string& base = "");
  void define(const std::string& value, TensorId id);
  int irDim(const std::string& value, int64_t axis) const;
  std::string boundValue(const std::string& value) const;
  int castProducing(const std::string& value, graph::DType dtype) const;

  void mapMatmul();
  void mapGemm();
  void mapBinary();
  void mapReduce();
  void mapSoftmax();
  void mapRotateHalf();

  const Model& model_;
  const std::vector<NodeSupport>& support_;
  const std::set<std::string>& readSwapped_;
  const std::map<std::string, Tiling>& tiled_;
  graph::GraphBuilder builder_;
  std::set<std::string> inside_;
  std::map<std::string, IrValue> values_;
  std::map<std::string, std::pair<TensorId, int>> externals_;  // value -> (input, rank)
  std::set<std::string> names_;
  std::vector<BoundInput> inputs_;
  std::vector<BoundOutput> outputs_;
  std::set<int> framework_;
  int node_ = -1;
};

std::optional<double> ProgramBuilder::scalarOf(const std::string& value) const {
  if (inside_.count(value)) {
    const auto found = values_.find(value);
    return found == values_.end() ? std::nullopt : found->second.scalar;
  }
  const auto c = model_.constants.find(value);
  if (c == model_.constants.end() || c->second.values.size() != 1) return std::nullopt;
  return c->second.values[0];
}

// The rank the value has in the IR: a computed value's own, else its stripped ONNX rank.
int ProgramBuilder::rankOf(const std::string& value) const {
  const auto found = values_.find(value);
  if (found != values_.end() && found->second.tensor >= 0) {
    return static_cast<int>(builder_.desc(found->second.tensor).shape.size());
  }
  return static_cast<int>(stripDims(onnxShape(value)).size());
}

std::string ProgramBuilder::fresh(const std::string& base) {
  std::string name = sanitizeName(base);
  for (int k = 1; names_.count(name); ++k) name = sanitizeName(base) + "_" + std::to_string(k);
  names_.insert(name);
  return name;
}

TensorId ProgramBuilder::op(OpKind kind, std::vector<TensorId> in, graph::OpAttrs attrs,
                            const std::string& base) {
  try {
    return builder_.op(kind, std::move(in), attrs,
                       fresh(base.empty() ? node().outputs.at(0) : base));
  } catch (const graph::ShapeError& e) {
    fail(e.what());
  }
}

void ProgramBuilder::define(const std::string& value, TensorId id) {
  const Dims& ir = builder_.desc(id).shape;
  if (!sameUpToLeadingOnes(ir, onnxShape(value))) {
    fail("its result " + graph::formatDims(onnxShape(value)) + " is " + graph::formatDims(ir) +
         " in the IR (the IR keeps reduced dims and aligns ranks only by leading size-1 dims)");
  }
  values_[value] = tensorValue(id);
}

// An input of the program for a value computed outside: through the views it comes by, down
// to the buffer that holds it.
TensorId ProgramBuilder::external(const std::string& value, int rank, bool transposeHere) {
  const std::string key = value + (transposeHere ? "^T" : "");
  if (const auto found = externals_.find(key); found != externals_.end()) {
    if (found->second.second != rank) {
      fail("'" + value + "' is read at ranks " + std::to_string(found->second.second) + " and " +
           std::to_string(rank));
    }
    return found->second.first;
  }
  const Value& v = model_.values.at(value);
  if (!v.dtype) fail("input '" + value + "' is " + v.elemType);
  std::string buffer = value;
  std::vector<int> views;  // from the value down to its buffer
  for (;;) {
    const int producer = model_.producerOf(buffer);
    if (producer < 0 || support_[producer].role != NodeRole::View) break;
    views.push_back(producer);
    buffer = model_.nodes[producer].inputs.at(0);
  }
  graph::Layout layout = graph::Layout::RowMajor;
  for (auto v = views.rbegin(); v != views.rend(); ++v) layout = viewLayout(layout, support_[*v]);
  if (readSwapped_.count(value)) {
    if (layout == graph::Layout::Transposed) {
      fail("reads '" + value +
           "' with its heads swapped, a transposed view: no layout describes it");
    }
    NodeSupport swap;
    swap.swapsHeads = true;
    layout = viewLayout(layout, swap);
  }
  if (transposeHere) {
    if (layout == graph::Layout::HeadsTransposed) {
      fail("reads '" + value + "' transposed, a heads_transposed view: no layout describes it");
    }
    NodeSupport swap;
    swap.transposes = true;
    layout = viewLayout(layout, swap);
  }
  Dims shape = stripDims(onnxShape(value));
  if (transposeHere) std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  while (static_cast<int>(shape.size()) < rank) shape.insert(shape.begin(), 1);
  const std::string irName = fresh(value + (transposeHere ? "_T" : ""));
  if (static_cast<int>(shape.size()) < graph::swappedDimsFromEnd(layout).first) {
    fail("reads '" + value + "' as " + std::string(graph::layoutName(layout)) + " at rank " +
         std::to_string(shape.size()));
  }
  const TensorId id = builder_.input(irName, *v.dtype, shape, layout);
  externals_[key] = {id, rank};
  const auto tiling = tiled_.find(value);
  inputs_.push_back({irName, value, buffer, layout == graph::Layout::Transposed, layout,
                     tiling == tiled_.end() ? Tiling{} : tiling->second});
  return id;
}

// The IR tensor of a value at `rank` (inputs are declared at the rank their first use needs).
TensorId ProgramBuilder::tensor(const std::string& value, int rank) {
  if (!inside_.count(value)) {
    if (model_.constants.count(value) && model_.constants.at(value).values.size() == 1) {
      fail("reads the constant '" + value + "' where the IR takes a tensor");
    }
    return external(value, rank);
  }
  const IrValue& v = values_.at(value);
  if (v.readsOutside) {
    const std::string bound = boundValue(value);
    for (int p = model_.producerOf(bound); p >= 0 && inside_.count(model_.nodes[p].outputs.at(0));
         p = model_.producerOf(model_.nodes[p].inputs.at(support_[p].aliasInput))) {
      framework_.insert(p);
    }
    return external(bound, rank);
  }
  if (v.tensor < 0) {
    if (v.denominator >= 0) {
      throw BuildFailure(v.reciprocalNode, "its reciprocal is read by " + node().op + " '" +
                                               node().name + "'; the IR divides only");
    }
    fail("reads the constant '" + value + "' where the IR takes a tensor");
  }
  if (rankOf(value) != rank) {
    fail("broadcasts '" + value + "' (rank " + std::to_string(rankOf(value)) +
         " in the IR) to rank " + std::to_string(rank) + ": only inputs take leading size-1 dims");
  }
  return v.tensor;
}

// The value an alias chain from outside (casts, Identity, reshapes of leading 1s) is read
// from: the narrowest float along it, the one nearest its source among equals. A cast to a
// wider type is exact, so the narrowest value holds all the chain passes on: the program reads
// what the framework's own consumers read (RoPE's f32 cos/sin, cast to f16), in the dtype the
// rest of the subgraph computes in (an RMSNorm's f32 upcast of an f16 input reads the input).
std::string ProgramBuilder::boundValue(const std::string& value) const {
  std::string best = value, current = value;
  for (;;) {
    const int p = model_.producerOf(current);
    if (p < 0 || !inside_.count(current) || support_[p].role != NodeRole::Alias) break;
    current = model_.nodes[p].inputs.at(support_[p].aliasInput);
    const std::optional<graph::DType>& up = model_.values.at(current).dtype;
    const std::optional<graph::DType>& now = model_.values.at(best).dtype;
    if (!up || !now) break;
    if (graph::dtypeBytes(*up) < graph::dtypeBytes(*now) || *up == *now) best = current;
  }
  return best;
}

int ProgramBuilder::irDim(const std::string& value, int64_t axis) const {
  const size_t onnxRank = onnxShape(value).size();
  const std::optional<int> a = normalizeAxis(axis, onnxRank);
  if (!a) fail("axis " + std::to_string(axis) + " is out of range");
  return *a - static_cast<int>(onnxRank) + rankOf(value);
}

void ProgramBuilder::mapMatmul() {
  const std::string& a = node().inputs[0];
  const std::string& b = node().inputs[1];
  const int rank = std::max({rankOf(a), rankOf(b), 2});
  define(node().outputs[0], op(OpKind::Matmul, {tensor(a, rank), tensor(b, rank)}));
}

void ProgramBuilder::mapGemm() {
  const std::vector<std::string>& in = node().inputs;
  std::vector<TensorId> operands;
  for (int i = 0; i < 2; ++i) {
    const bool transpose = node().intAttr(i == 0 ? "transA" : "transB", 0) != 0;
    if (transpose && inside_.count(in[i])) {
      fail(std::string(i == 0 ? "transA" : "transB") +
           " of a value computed in the subgraph; only inputs are read transposed");
    }
    operands.push_back(transpose ? external(in[i], 2, true) : tensor(in[i], 2));
  }
  TensorId y = op(OpKind::Matmul, operands, {}, node().outputs[0] + "_mm");
  const double alpha = node().floatAttr("alpha", 1.0), beta = node().floatAttr("beta", 1.0);
  if (alpha != 1.0) y = op(OpKind::Scale, {y}, {.scale = alpha}, node().outputs[0] + "_alpha");
  if (in.size() > 2 && !in[2].empty() && beta != 0.0) {
    if (std::optional<double> c = scalarOf(in[2])) {
      y = op(OpKind::AddScalar, {y}, {.scale = beta * *c});
    } else {
      TensorId bias = tensor(in[2], 2);
      if (beta != 1.0)
        bias = op(OpKind::Scale, {bias}, {.scale = beta}, node().outputs[0] + "_beta");
      y = op(OpKind::Add, {y, bias});
    }
  }
  define(node().outputs[0], y);
}

void ProgramBuilder::mapBinary() {
  const std::string& kind = node().op;
  const std::string& a = node().inputs[0];
  const std::string& b = node().inputs[1];
  const std::string& out = node().outputs[0];
  const std::optional<double> ca = scalarOf(a), cb = scalarOf(b);
  auto pending = [&](const std::string& v) {
    const auto found = values_.find(v);
    return found != values_.end() && found->second.denominator >= 0 ? &found->second : nullptr;
  };
  if (ca && cb) fail("both operands are constants");
  if (kind == "Mul" && (pending(a) || pending(b))) {
    const IrValue r = pending(a) ? *pending(a) : *pending(b);
    const std::string& other = pending(a) ? b : a;
    if (scalarOf(other)) fail("multiplies a reciprocal by a constant");
    const int rank =
        std::max(rankOf(other), static_cast<int>(builder_.desc(r.denominator).shape.size()));
    if (r.factor == 1.0) return define(out, op(OpKind::Div, {tensor(other, rank), r.denominator}));
    const TensorId quotient =
        op(OpKind::Div, {tensor(other, rank), r.denominator}, {}, out + "_div");
    define(out, op(OpKind::Scale, {quotient}, {.scale = r.factor}));
    return;
  }
  if (ca || cb) {
    const double c = ca ? *ca : *cb;
    const std::string& x = ca ? b : a;
    const int rank = rankOf(x);
    if (kind == "Div" && ca) {  // c / x waits for the Mul that divides by x
      values_[out] = IrValue{-1, std::nullopt, tensor(x, rank), c, node_};
      return;
    }
    if (kind == "Add") return define(out, op(OpKind::AddScalar, {tensor(x, rank)}, {.scale = c}));
    if (kind == "Mul") return define(out, op(OpKind::Scale, {tensor(x, rank)}, {.scale = c}));
    if (kind == "Div") return define(out, op(OpKind::Scale, {tensor(x, rank)}, {.scale = 1.0 / c}));
    if (kind == "Sub" && cb)
      return define(out, op(OpKind::AddScalar, {tensor(x, rank)}, {.scale = -c}));
    const TensorId neg = op(OpKind::Scale, {tensor(x, rank)}, {.scale = -1.0}, out + "_neg");
    return define(out, op(OpKind::AddScalar, {neg}, {.scale = c}));
  }
  const int rank = std::max(rankOf(a), rankOf(b));
  const OpKind k = kind == "Add"   ? OpKind::Add
                   : kind == "Sub" ? OpKind::Sub
                   : kind == "Mul" ? OpKind::Mul
                                   : OpKind::Div;
  define(out, op(k, {tensor(a, rank), tensor(b, rank)}));
}

void ProgramBuilder::mapReduce() {
  const std::string& x = node().inputs[0];
  const std::string& out = node().outputs[0];
  std::vector<int64_t> axes = *axesOf(model_, node());
  if (axes.empty() && !node().intAttr("noop_with_empty_axes", 0)) {
    for (size_t d = 0; d < onnxShape(x).size(); ++d) axes.push_back(static_cast<int64_t>(d));
  }
  TensorId y = tensor(x, rankOf(x));
  int64_t count = 1;
  std::set<int> dims;
  for (int64_t axis : axes) {
    const int d = irDim(x, axis);
    if (d >= 0) dims.insert(d);  // a dim dropped as a leading 1 sums a single element
  }
  const OpKind kind = node().op == "ReduceMax" ? OpKind::ReduceMax : OpKind::ReduceSum;
  if (dims.empty()) {  // only dims of size 1: the value itself
    values_[out] = tensorValue(y);
    return;
  }
  const bool mean = node().op == "ReduceMean";
  for (auto d = dims.begin(); d != dims.end(); ++d) {
    count *= builder_.desc(y).shape[*d];
    graph::OpAttrs attrs;
    attrs.dim = *d;
    const bool last = std::next(d) == dims.end() && !mean;
    y = op(kind, {y}, attrs, last ? out : out + "_sum");
  }
  if (mean) y = op(OpKind::Scale, {y}, {.scale = 1.0 / static_cast<double>(count)});
  define(out, y);
}

void ProgramBuilder::mapSoftmax() {
  const std::string& x = node().inputs[0];
  const std::string& out = node().outputs[0];
  const int d = irDim(x, node().intAttr("axis", -1));
  if (d < 0) fail("softmax over a dim of size 1");
  graph::OpAttrs attrs;
  attrs.dim = d;
  const TensorId in = tensor(x, rankOf(x));
  const TensorId max = op(OpKind::ReduceMax, {in}, attrs, out + "_max");
  const TensorId e =
      op(OpKind::Exp, {op(OpKind::Sub, {in, max}, {}, out + "_shifted")}, {}, out + "_exp");
  const TensorId sum = op(OpKind::ReduceSum, {e}, attrs, out + "_sum");
  define(out, op(OpKind::Div, {e, sum}));
}

// Concat(Neg(Slice(x, h:2h)), Slice(x, 0:h)) on the last axis (node_support.h).
void ProgramBuilder::mapRotateHalf() {
  const std::string& x = model_.nodes[model_.producerOf(node().inputs[1])].inputs.at(0);
  graph::OpAttrs attrs;
  attrs.dim = irDim(x, -1);
  define(node().outputs[0], op(OpKind::RotateHalf, {tensor(x, rankOf(x))}, attrs));
}

void ProgramBuilder::map(int index) {
  node_ = index;
  const Node& n = node();
  if (support_[index].role == NodeRole::Guard) return;  // only its Where reads it, as an alias
  if (support_[index].role == NodeRole::Part) return;   // its rotate_half's Concat maps it
  if (support_[index].role == NodeRole::Alias) {
    const std::string& in = n.inputs.at(support_[index].aliasInput);
    if (inside_.count(in)) {
      values_[n.outputs[0]] = values_.at(in);
    } else if (std::optional<double> c = scalarOf(in)) {
      values_[n.outputs[0]] = IrValue{-1, c};
    } else {
      IrValue alias;
      alias.readsOutside = true;  // declared at the rank and from the value its readers need
      values_[n.outputs[0]] = alias;
    }
    return;
  }
  const std::string& op0 = n.op;
  const std::string& out = n.outputs.at(0);
  if (op0 == "MatMul") return mapMatmul();
  if (op0 == "Gemm") return mapGemm();
  if (op0 == "Add" || op0 == "Sub" || op0 == "Mul" || op0 == "Div") return mapBinary();
  if (op0.rfind("Reduce", 0) == 0) return mapReduce();
  if (op0 == "Softmax") return mapSoftmax();
  if (op0 == "Concat") return mapRotateHalf();
  const std::string& x = n.inputs.at(0);
  if (scalarOf(x)) fail("computes on a constant");
  if (op0 == "Reciprocal") {
    values_[out] = IrValue{-1, std::nullopt, tensor(x, rankOf(x)), 1.0, index};
    return;
  }
  const TensorId in = tensor(x, rankOf(x));
  if (op0 == "Exp") return define(out, op(OpKind::Exp, {in}));
  if (op0 == "Sqrt") return define(out, op(OpKind::Sqrt, {in}));
  if (op0 == "Sigmoid") return define(out, op(OpKind::Sigmoid, {in}));
  if (op0 == "Neg") return define(out, op(OpKind::Scale, {in}, {.scale = -1.0}));
  if (op0 == "Pow") {
    const double e = *scalarOf(n.inputs.at(1));
    if (e == 1.0) return define(out, in);
    return define(out, op(e == 2.0 ? OpKind::Square : OpKind::Sqrt, {in}));
  }
  fail("no mapping for ONNX op '" + op0 + "'");
}

// The Cast nearest upstream of `value`, inside the set, that converts to `dtype`: the node to
// leave out when a result would leave the subgraph in another dtype than it computes in.
int ProgramBuilder::castProducing(const std::string& value, graph::DType dtype) const {
  std::vector<std::string> pending{value};
  std::set<std::string> seen;
  while (!pending.empty()) {
    const std::string v = pending.front();
    pending.erase(pending.begin());
    if (!inside_.count(v) || !seen.insert(v).second) continue;
    const int n = model_.producerOf(v);
    if (n < 0) continue;
    const Node& candidate = model_.nodes[n];
    if (candidate.op == "Cast" && model_.values.at(v).dtype == dtype) return n;
    pending.insert(pending.end(), candidate.inputs.begin(), candidate.inputs.end());
  }
  return -1;
}

void ProgramBuilder::output(const std::string& value) {
  if (!values_.count(value)) {  // a part of a pattern whose head was left out
    node_ = model_.producerOf(value);
    fail("its result '" + value + "' is read outside the pattern it belongs to");
  }
  const IrValue& v = values_.at(value);
  if (v.denominator >= 0) {
    throw BuildFailure(v.reciprocalNode, "its reciprocal leaves the subgraph; the IR divides only");
  }
  node_ = model_.producerOf(value);
  if (v.readsOutside) fail("its result is an input unchanged");
  if (v.tensor < 0) fail("its result '" + value + "' is a constant");
  const graph::TensorDesc& desc = builder_.desc(v.tensor);
  const Value& onnxValue = model_.values.at(value);
  for (const BoundInput& in : inputs_) {
    if (builder_.graph().findTensor(in.irName) == v.tensor)
      fail("its result is an input unchanged");
  }
  for (const BoundOutput& o : outputs_) {
    if (builder_.graph().findTensor(o.irName) == v.tensor) {
      fail("its result '" + value + "' is the same tensor as '" + o.value + "'");
    }
  }
  if (onnxValue.dtype && *onnxValue.dtype != desc.dtype) {
    if (const int cast = castProducing(value, *onnxValue.dtype); cast >= 0) {
      throw BuildFailure(cast, "converts to " + std::string(graph::dtypeName(*onnxValue.dtype)) +
                                   " for '" + value + "', which leaves the subgraph computed in " +
                                   std::string(graph::dtypeName(desc.dtype)) +
                                   " (the IR stores a result in its operands' dtype)");
    }
    fail("its result leaves the subgraph as " + std::string(graph::dtypeName(*onnxValue.dtype)) +
         " while the subgraph computes it in " + std::string(graph::dtypeName(desc.dtype)) +
         " (the IR stores a result in its operands' dtype)");
  }
  builder_.output(v.tensor);
  outputs_.push_back({desc.name, value});
}

}  // namespace

std::string sanitizeName(const std::string& onnxName) {
  std::string name;
  for (char c : onnxName) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok)
      name += c;
    else if (!name.empty() && name.back() != '_')
      name += '_';
  }
  while (!name.empty() && name.back() == '_') name.pop_back();
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) name = "v" + name;
  return name;
}

BuiltProgram buildProgram(const Model& model, const std::vector<NodeSupport>& support,
                          const std::vector<int>& nodes, const std::vector<std::string>& outputs,
                          const std::string& name, const std::set<std::string>& readSwapped,
                          const std::map<std::string, Tiling>& tiled) {
  ProgramBuilder builder(model, support, nodes, name, readSwapped, tiled);
  for (int n : nodes) builder.map(n);
  for (const std::string& value : outputs) builder.output(value);
  try {
    return builder.finish();
  } catch (const graph::ShapeError& e) {
    throw BuildFailure(nodes.back(), e.what());
  } catch (const graph::IrError& e) {
    throw BuildFailure(nodes.back(), e.what());
  }
}

}  // namespace mugraph::onnx_import
