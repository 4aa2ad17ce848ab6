// ProgramBuilder's per-op mappings: each supported ONNX node (node_support.h) as IR ops.
#include <algorithm>

#include "onnx_import/model_shapes.h"
#include "onnx_import/program_builder_impl.h"

namespace mugraph::onnx_import::detail {

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

// Add(scores, M) with M a causal mask before a softmax (causal_masks.h): M is never read.
void ProgramBuilder::mapCausalMask() {
  const CausalAdd& causal = *support_[node_].causal;
  const std::string& x = node().inputs[1 - causal.maskInput];
  define(node().outputs[0],
         op(OpKind::CausalMask, {tensor(x, rankOf(x))}, {.queries = causal.queries}));
  causalMasks_.push_back({node().name, causal.mask, causal.queries});
}

void ProgramBuilder::mapBinary() {
  if (support_[node_].causal) return mapCausalMask();
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
    const int rank = resultRank(rankOf(x), out);
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
  const int rank = resultRank(std::max(rankOf(a), rankOf(b)), out);
  const OpKind k = kind == "Add"   ? OpKind::Add
                   : kind == "Sub" ? OpKind::Sub
                   : kind == "Mul" ? OpKind::Mul
                                   : OpKind::Div;
  // f32 times a 16-bit value: the framework promotes to f32 and casts the result back (OLMo 2's
  // RoPE: f16 q times f32 cos), as the program's casts, aliases, leave it in 16 bits. An f32
  // operand read from outside is read at the other's dtype, converted by the binding.
  std::optional<graph::DType> readA, readB;
  const std::optional<graph::DType> da = programDtype(a), db = programDtype(b);
  const auto fromOutside = [&](const std::string& v) {
    return !inside_.count(v) || values_.at(v).readsOutside;
  };
  if (da && db && *da != *db) {
    if (*da == graph::DType::F32 && fromOutside(a)) readA = db;
    if (*db == graph::DType::F32 && fromOutside(b)) readB = da;
    // An f32 operand computed here (RoPE's cos times its scaling, a 0-d tensor under dynamic
    // shapes): the framework computes it, converted to 16 bits on the way where the model
    // converts it, and the subgraph reads the result as it reads any f32 operand from outside.
    for (const auto& [v, read] : {std::pair{a, readA}, std::pair{b, readB}}) {
      if (read || programDtype(v) != graph::DType::F32) continue;
      for (int p = model_.producerOf(v); p >= 0;
           p = model_.producerOf(model_.nodes[p].inputs.at(support_[p].aliasInput))) {
        const Node& n = model_.nodes[p];
        if (n.op == "Cast" && model_.values.at(n.outputs.at(0)).dtype != graph::DType::F32) {
          throw BuildFailure(p, "converts '" + n.inputs.at(0) + "' to " +
                                    model_.values.at(n.outputs[0]).elemType + " for '" + out +
                                    "', which the subgraph would compute in f32");
        }
        if (support_[p].role == NodeRole::Compute) {
          throw BuildFailure(p, "computes '" + n.outputs.at(0) + "' in f32 for '" + out +
                                    "', which reads it beside a 16-bit value: the framework "
                                    "computes it, and the subgraph reads it converted");
        }
        if (support_[p].role != NodeRole::Alias && support_[p].role != NodeRole::View) break;
      }
    }
  }
  define(out, op(k, {tensor(a, rank, readA), tensor(b, rank, readB)}));
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

// Reshape(Concat(Unsqueeze(Neg(Slice(x, 1::2))), Unsqueeze(Slice(x, 0::2)))) back to x's shape
// (rope_patterns.h): x is the slices' input, reached through the Concat's second operand.
void ProgramBuilder::mapRotatePairs() {
  const Node& concat = model_.nodes[model_.producerOf(node().inputs.at(0))];
  const Node& axis = model_.nodes[model_.producerOf(concat.inputs.at(1))];
  const std::string& x = model_.nodes[model_.producerOf(axis.inputs.at(0))].inputs.at(0);
  graph::OpAttrs attrs;
  attrs.dim = irDim(x, -1);
  define(node().outputs[0], op(OpKind::RotatePairs, {tensor(x, rankOf(x))}, attrs));
}

void ProgramBuilder::map(int index) {
  node_ = index;
  const Node& n = node();
  if (support_[index].role == NodeRole::Guard) return;  // only its Where reads it, as an alias
  // its rotation's head maps it, or its causal mask's Add does
  if (support_[index].role == NodeRole::Part) return;
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
  // A Concat or a reshape is Compute only as the head of a rotation (rope_patterns.h).
  if (op0 == "Concat") return mapRotateHalf();
  if (op0 == "Reshape" || op0 == "Flatten") return mapRotatePairs();
  const std::string& x = n.inputs.at(0);
  if (scalarOf(x)) fail("computes on a constant");
  if (op0 == "Reciprocal") {
    values_[out] = IrValue{-1, std::nullopt, tensor(x, resultRank(rankOf(x), out)), 1.0, index};
    return;
  }
  const TensorId in = tensor(x, resultRank(rankOf(x), out));
  if (op0 == "Exp") return define(out, op(OpKind::Exp, {in}));
  if (op0 == "Sqrt") return define(out, op(OpKind::Sqrt, {in}));
  if (op0 == "Sigmoid") return define(out, op(OpKind::Sigmoid, {in}));
  if (op0 == "Tanh") return define(out, op(OpKind::Tanh, {in}));
  if (op0 == "Erf") return define(out, op(OpKind::Erf, {in}));
  if (op0 == "Relu") return define(out, op(OpKind::Relu, {in}));
  if (op0 == "Neg") return define(out, op(OpKind::Scale, {in}, {.scale = -1.0}));
  if (op0 == "Pow") {
    const double e = *scalarOf(n.inputs.at(1));
    if (e == 1.0) return define(out, in);
    if (e == 3.0) {
      return define(out, op(OpKind::Mul, {in, op(OpKind::Square, {in}, {}, out + "_square")}));
    }
    return define(out, op(e == 2.0 ? OpKind::Square : OpKind::Sqrt, {in}));
  }
  fail("no mapping for ONNX op '" + op0 + "'");
}

}  // namespace mugraph::onnx_import::detail
