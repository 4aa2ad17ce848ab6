// Abstract-expression terms: the hash-consing table, canonical text, and the symbolic
// evaluation of kernel graphs and block graphs into terms (tiling forgotten, extents kept).
#include "verify/abstract_expr.h"

#include <algorithm>
#include <charconv>
#include <mutex>
#include <unordered_map>

namespace mugraph::verify {
namespace {

const char* kindName(ExprKind kind) {
  switch (kind) {
    case ExprKind::Input:
      return "input";
    case ExprKind::Const:
      return "const";
    case ExprKind::Add:
      return "add";
    case ExprKind::Mul:
      return "mul";
    case ExprKind::Div:
      return "div";
    case ExprKind::Exp:
      return "exp";
    case ExprKind::Sum:
      return "sum";
    case ExprKind::Sqrt:
      return "sqrt";
    case ExprKind::Silu:
      return "silu";
    case ExprKind::Sigmoid:
      return "sigmoid";
    case ExprKind::Tanh:
      return "tanh";
    case ExprKind::Erf:
      return "erf";
    case ExprKind::Relu:
      return "relu";
    case ExprKind::Max:
      return "max";
    case ExprKind::RmsNorm:
      return "rms_norm";
    case ExprKind::RotateHalf:
      return "rotate_half";
    case ExprKind::RotatePairs:
      return "rotate_pairs";
    case ExprKind::CausalMask:
      return "causal_mask";
  }
  return "?";
}

bool hasExtent(ExprKind kind) {
  return kind == ExprKind::Sum || kind == ExprKind::Max || kind == ExprKind::RmsNorm;
}

std::string formatConstant(double value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

std::string canonicalText(ExprKind kind, const std::string& name, double value, int64_t extent,
                          const std::vector<AbstractExprRef>& operands) {
  if (kind == ExprKind::Input) return name;
  if (kind == ExprKind::Const) return "const(" + formatConstant(value) + ")";
  std::string text = std::string(kindName(kind)) + "(";
  if (hasExtent(kind)) text += std::to_string(extent) + ",";
  for (size_t i = 0; i < operands.size(); ++i) {
    if (i > 0) text += ",";
    text += operands[i]->str();
  }
  return text + ")";
}

// Live terms by canonical text. Entries whose term died are swept when the table doubles.
class InternTable {
 public:
  template <typename Create>
  AbstractExprRef intern(const std::string& text, Create create) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = terms_.find(text);
    if (it != terms_.end()) {
      if (AbstractExprRef live = it->second.lock()) return live;
    }
    AbstractExprRef fresh = create();
    terms_[text] = fresh;
    if (terms_.size() > 2 * sizeAfterSweep_ + 1024) sweep();
    return fresh;
  }

 private:
  void sweep() {
    std::erase_if(terms_, [](const auto& entry) { return entry.second.expired(); });
    sizeAfterSweep_ = terms_.size();
  }

  std::mutex mutex_;
  std::unordered_map<std::string, std::weak_ptr<const AbstractExpr>> terms_;
  size_t sizeAfterSweep_ = 0;
};

InternTable& internTable() {
  static InternTable table;
  return table;
}

}  // namespace

AbstractExpr::AbstractExpr(Passkey, ExprKind kind, std::string name, double value, int64_t extent,
                           std::vector<AbstractExprRef> operands, std::string text)
    : kind_(kind),
      name_(std::move(name)),
      value_(value),
      extent_(extent),
      operands_(std::move(operands)),
      text_(std::move(text)) {}

AbstractExprRef AbstractExpr::make(ExprKind kind, std::string name, double value, int64_t extent,
                                   std::vector<AbstractExprRef> operands) {
  std::string text = canonicalText(kind, name, value, extent, operands);
  return internTable().intern(text, [&] {
    return std::make_shared<const AbstractExpr>(Passkey{}, kind, std::move(name), value, extent,
                                                std::move(operands), text);
  });
}

AbstractExprRef AbstractExpr::input(const std::string& name) {
  return make(ExprKind::Input, name, 0, 0, {});
}
AbstractExprRef AbstractExpr::constant(double value) {
  return make(ExprKind::Const, "", value, 0, {});
}
AbstractExprRef AbstractExpr::add(AbstractExprRef a, AbstractExprRef b) {
  return make(ExprKind::Add, "", 0, 0, {std::move(a), std::move(b)});
}
AbstractExprRef AbstractExpr::mul(AbstractExprRef a, AbstractExprRef b) {
  return make(ExprKind::Mul, "", 0, 0, {std::move(a), std::move(b)});
}
AbstractExprRef AbstractExpr::div(AbstractExprRef a, AbstractExprRef b) {
  return make(ExprKind::Div, "", 0, 0, {std::move(a), std::move(b)});
}
AbstractExprRef AbstractExpr::exp(AbstractExprRef a) {
  return make(ExprKind::Exp, "", 0, 0, {std::move(a)});
}
AbstractExprRef AbstractExpr::sum(int64_t n, AbstractExprRef a) {
  if (n == 1) return a;
  return make(ExprKind::Sum, "", 0, n, {std::move(a)});
}
AbstractExprRef AbstractExpr::sqrt(AbstractExprRef a) {
  return make(ExprKind::Sqrt, "", 0, 0, {std::move(a)});
}
AbstractExprRef AbstractExpr::silu(AbstractExprRef a) {
  return make(ExprKind::Silu, "", 0, 0, {std::move(a)});
}
AbstractExprRef AbstractExpr::sigmoid(AbstractExprRef a) {
  return make(ExprKind::Sigmoid, "", 0, 0, {std::move(a)});
}
AbstractExprRef AbstractExpr::tanh(AbstractExprRef a) {
  return make(ExprKind::Tanh, "", 0, 0, {std::move(a)});
}
AbstractExprRef AbstractExpr::erf(AbstractExprRef a) {
  return make(ExprKind::Erf, "", 0, 0, {std::move(a)});
}
AbstractExprRef AbstractExpr::relu(AbstractExprRef a) {
  return make(ExprKind::Relu, "", 0, 0, {std::move(a)});
}
AbstractExprRef AbstractExpr::max(int64_t n, AbstractExprRef a) {
  if (n == 1) return a;
  return make(ExprKind::Max, "", 0, n, {std::move(a)});
}
AbstractExprRef AbstractExpr::rmsNorm(int64_t n, AbstractExprRef a) {
  return make(ExprKind::RmsNorm, "", 0, n, {std::move(a)});
}
AbstractExprRef AbstractExpr::rotateHalf(AbstractExprRef a) {
  return make(ExprKind::RotateHalf, "", 0, 0, {std::move(a)});
}
AbstractExprRef AbstractExpr::rotatePairs(AbstractExprRef a) {
  return make(ExprKind::RotatePairs, "", 0, 0, {std::move(a)});
}
AbstractExprRef AbstractExpr::causalMask(AbstractExprRef a) {
  return make(ExprKind::CausalMask, "", 0, 0, {std::move(a)});
}

namespace {

using E = AbstractExpr;
using graph::OpKind;

// The term of a compute op (not input/output/accumulator/block graph). `shapes` are the
// operand shapes at the level where the op runs: device shapes or tile shapes.
// Terms a reduction over `dim` of an operand of `shape` adds: the dim's extent, or for a
// partial dim (cut as `split` says) ⌊n / parts⌋, a part of every tile's count.
int64_t reducedCount(const graph::Dims& shape, int dim, const graph::TileSplit* split) {
  if (!split || !split->at(dim).partial()) return shape.at(dim);
  const graph::DimSplit& cut = split->at(dim);
  return std::max<int64_t>(1, cut.extent / (cut.parts() * cut.iterations()));
}

AbstractExprRef applyOp(OpKind kind, const graph::OpAttrs& attrs,
                        const std::vector<AbstractExprRef>& in,
                        const std::vector<const graph::Dims*>& shapes,
                        const graph::TileSplit* split = nullptr) {
  switch (kind) {
    case OpKind::Matmul:
      return E::sum(reducedCount(*shapes[0], static_cast<int>(shapes[0]->size()) - 1, split),
                    E::mul(in[0], in[1]));
    case OpKind::Exp:
      return E::exp(in[0]);
    case OpKind::Square:
      return E::mul(in[0], in[0]);
    case OpKind::Sqrt:
      return E::sqrt(in[0]);
    case OpKind::Silu:
      return E::silu(in[0]);
    case OpKind::Sigmoid:
      return E::sigmoid(in[0]);
    case OpKind::Tanh:
      return E::tanh(in[0]);
    case OpKind::Erf:
      return E::erf(in[0]);
    case OpKind::Relu:
      return E::relu(in[0]);
    case OpKind::Scale:
      return E::mul(in[0], E::constant(attrs.scale));
    case OpKind::AddScalar:
      return E::add(in[0], E::constant(attrs.scale));
    case OpKind::Add:
      return E::add(in[0], in[1]);
    case OpKind::Sub:
      return E::add(in[0], E::mul(E::constant(-1), in[1]));
    case OpKind::Mul:
      return E::mul(in[0], in[1]);
    case OpKind::Div:
      return E::div(in[0], in[1]);
    case OpKind::ReduceSum: {
      int64_t n = reducedCount(*shapes[0], attrs.dim, split);
      return E::sum(attrs.to > 0 ? n / attrs.to : n, in[0]);
    }
    case OpKind::ReduceMax:
      return E::max(reducedCount(*shapes[0], attrs.dim, split), in[0]);
    case OpKind::RmsNorm:
      return E::rmsNorm(reducedCount(*shapes[0], attrs.dim, split), in[0]);
    case OpKind::RotateHalf:
      return E::rotateHalf(in[0]);
    case OpKind::RotatePairs:
      return E::rotatePairs(in[0]);
    case OpKind::CausalMask:
      return E::causalMask(in[0]);
    default:
      break;
  }
  throw std::logic_error("applyOp: " + std::string(graph::opName(kind)) + " is not a compute op");
}

graph::IrError undefinedOperand(const std::string& section, int index, int blockOp,
                                size_t operand) {
  graph::IrLocation location{section, index, blockOp, "inputs[" + std::to_string(operand) + "]"};
  return graph::IrError(location, "abstract expressions: operand " + std::to_string(operand) +
                                      " is used before it is defined");
}

}  // namespace

std::vector<AbstractExprRef> abstractExpressionsOfBlock(
    const graph::BlockGraph& block, const std::vector<AbstractExprRef>& kernelInputs,
    const std::vector<graph::Dims>* kernelInputShapes) {
  std::vector<AbstractExprRef> terms(block.tensors.size());
  std::vector<graph::TileSplit> splits;
  if (kernelInputShapes) splits = graph::blockTileSplits(block, *kernelInputShapes);
  for (size_t opIndex = 0; opIndex < block.ops.size(); ++opIndex) {
    const graph::BlockOp& op = block.ops[opIndex];
    if (op.kind == OpKind::Output) continue;
    if (op.kind == OpKind::Input) {
      if (op.kernelTensor < 0 || op.kernelTensor >= static_cast<int>(kernelInputs.size())) {
        throw graph::IrError({"kernels", -1, static_cast<int>(opIndex), "kernelTensor"},
                             "abstract expressions: block input reads kernel input " +
                                 std::to_string(op.kernelTensor) + " which has no term");
      }
      terms.at(op.output) = kernelInputs[op.kernelTensor];
      continue;
    }
    std::vector<AbstractExprRef> in;
    std::vector<const graph::Dims*> shapes;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (!terms.at(op.inputs[i])) {
        throw undefinedOperand("kernels", -1, static_cast<int>(opIndex), i);
      }
      in.push_back(terms[op.inputs[i]]);
      shapes.push_back(&block.tensors[op.inputs[i]].shape);
    }
    if (op.kind == OpKind::AccumSum || op.kind == OpKind::AccumRescaledSum) {
      // The running max's term is the max over every iteration, so x's term already names the
      // final max: the rescaled sum is the plain sum of it.
      terms.at(op.output) = E::sum(block.forloop, in[0]);
    } else if (op.kind == OpKind::AccumMax) {
      terms.at(op.output) = E::max(block.forloop, in[0]);
    } else {
      terms.at(op.output) = applyOp(op.kind, op.attrs, in, shapes,
                                    splits.empty() ? nullptr : &splits.at(op.inputs[0]));
    }
  }
  return terms;
}

std::vector<AbstractExprRef> abstractExpressions(const graph::KernelGraph& graph) {
  std::vector<AbstractExprRef> terms(graph.tensors.size());
  for (graph::TensorId input : graph.inputs) {
    terms.at(input) = E::input(graph.tensors[input].name);
  }
  for (size_t opIndex = 0; opIndex < graph.ops.size(); ++opIndex) {
    const graph::KernelOp& op = graph.ops[opIndex];
    std::vector<AbstractExprRef> in;
    std::vector<const graph::Dims*> shapes;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (!terms.at(op.inputs[i])) throw undefinedOperand("ops", opIndex, -1, i);
      in.push_back(terms[op.inputs[i]]);
      shapes.push_back(&graph.tensors[op.inputs[i]].shape);
    }
    if (op.kind != OpKind::BlockGraph) {
      terms.at(op.outputs.at(0)) = applyOp(op.kind, op.attrs, in, shapes);
      continue;
    }
    const graph::BlockGraph& block = op.block.value();
    std::vector<graph::Dims> inputShapes;
    for (graph::TensorId t : op.inputs) inputShapes.push_back(graph.tensors[t].shape);
    std::vector<AbstractExprRef> blockTerms = abstractExpressionsOfBlock(block, in, &inputShapes);
    for (const graph::BlockOp& blockOp : block.ops) {
      if (blockOp.kind != OpKind::Output) continue;
      terms.at(op.outputs.at(blockOp.kernelTensor)) = blockTerms.at(blockOp.inputs.at(0));
    }
  }
  return terms;
}

namespace {

using CanonicalMemo = std::unordered_map<const AbstractExpr*, AbstractExprRef>;

bool isConstant(const AbstractExprRef& e, double value) {
  return e->kind() == ExprKind::Const && e->value() == value;
}

// The max term m of `e` = const(-1) * m, or null.
AbstractExprRef negatedMax(const AbstractExprRef& e) {
  if (e->kind() != ExprKind::Mul) return nullptr;
  const auto& in = e->operands();
  for (int i = 0; i < 2; ++i) {
    if (isConstant(in[i], -1.0) && in[1 - i]->kind() == ExprKind::Max) return in[1 - i];
  }
  return nullptr;
}

// The shift laws of the axiom table (shift-drop, shift-exp), applied eagerly: a value minus a
// max is the value, and exp of a max is 1. Safe, online and split softmax subtract maxes only
// to shift what exp sees, and the shift cancels, so with these their terms meet the program's
// term without a Z3 search. `keepShifts` turns them off.
AbstractExprRef withoutShift(const AbstractExprRef& sum) {
  const auto& in = sum->operands();
  for (int i = 0; i < 2; ++i) {
    if (negatedMax(in[i])) return in[1 - i];
  }
  return sum;
}

AbstractExprRef canonicalizeMemo(const AbstractExprRef& expr, bool keepShifts,
                                 CanonicalMemo& memo) {
  if (expr->operands().empty()) return expr;
  auto found = memo.find(expr.get());
  if (found != memo.end()) return found->second;
  std::vector<AbstractExprRef> in;
  for (const AbstractExprRef& operand : expr->operands()) {
    in.push_back(canonicalizeMemo(operand, keepShifts, memo));
  }
  AbstractExprRef result;
  switch (expr->kind()) {
    case ExprKind::Add:
    case ExprKind::Mul:
      if (in[1]->str() < in[0]->str()) std::swap(in[0], in[1]);
      if (expr->kind() == ExprKind::Mul && isConstant(in[0], 1.0)) {
        result = in[1];  // mul-one
      } else if (expr->kind() == ExprKind::Mul && isConstant(in[1], 1.0)) {
        result = in[0];
      } else if (expr->kind() == ExprKind::Add) {
        result = E::add(in[0], in[1]);
        if (!keepShifts) result = withoutShift(result);
      } else {
        result = E::mul(in[0], in[1]);
      }
      break;
    case ExprKind::Sum:
      result = in[0]->kind() == ExprKind::Sum
                   ? E::sum(expr->extent() * in[0]->extent(), in[0]->operands()[0])
                   : E::sum(expr->extent(), in[0]);
      break;
    case ExprKind::Div:
      result = E::div(in[0], in[1]);
      break;
    case ExprKind::Exp:
      result = !keepShifts && in[0]->kind() == ExprKind::Max ? E::constant(1.0) : E::exp(in[0]);
      break;
    case ExprKind::Sqrt:
      result = E::sqrt(in[0]);
      break;
    case ExprKind::Silu:
      result = E::silu(in[0]);
      break;
    case ExprKind::Sigmoid:
      result = E::sigmoid(in[0]);
      break;
    case ExprKind::Tanh:
      result = E::tanh(in[0]);
      break;
    case ExprKind::Erf:
      result = E::erf(in[0]);
      break;
    case ExprKind::Relu:
      result = E::relu(in[0]);
      break;
    case ExprKind::Max:  // max-split
      result = in[0]->kind() == ExprKind::Max
                   ? E::max(expr->extent() * in[0]->extent(), in[0]->operands()[0])
                   : E::max(expr->extent(), in[0]);
      break;
    case ExprKind::RmsNorm:
      result = E::rmsNorm(expr->extent(), in[0]);
      break;
    case ExprKind::RotateHalf:
      result = E::rotateHalf(in[0]);
      break;
    case ExprKind::RotatePairs:
      result = E::rotatePairs(in[0]);
      break;
    case ExprKind::CausalMask:
      result = E::causalMask(in[0]);
      break;
    default:
      result = expr;
      break;
  }
  memo.emplace(expr.get(), result);
  return result;
}

}  // namespace

AbstractExprRef canonicalize(const AbstractExprRef& expr, bool keepShifts) {
  CanonicalMemo memo;
  return canonicalizeMemo(expr, keepShifts, memo);
}

}  // namespace mugraph::verify
