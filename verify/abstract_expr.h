// Abstract expressions: a term over the program inputs for every tensor of a µgraph, forgetting
// shapes and tiling (matmul = sum(k, mul(a, b)), reductions = sum(n, x)). The search prunes a
// prefix whose terms cannot be part of the program's output term (see abstract_expr_oracle.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "graph/tile_splits.h"

namespace mugraph::verify {

enum class ExprKind {
  Input,        // a program input, by name
  Const,        // a numeric constant (scale factors, the -1 of sub)
  Add,          // add(a, b)
  Mul,          // mul(a, b)
  Div,          // div(a, b)
  Exp,          // exp(a)
  Sum,          // sum(n, a): the sum of n terms shaped like a
  Sqrt,         // uninterpreted: no axioms mention it
  Silu,         // uninterpreted
  Sigmoid,      // uninterpreted
  Tanh,         // uninterpreted
  Erf,          // uninterpreted
  Relu,         // uninterpreted
  Max,          // max(n, a): reduce_max / accum_max over n things; uninterpreted
  RmsNorm,      // rms_norm(n, a); uninterpreted
  RotateHalf,   // rotate_half(a): RoPE's signed lane permutation; only x ⊑ rotate_half(x)
  RotatePairs,  // rotate_pairs(a): interleaved RoPE's; another symbol, only x ⊑ rotate_pairs(x)
  CausalMask,   // causal_mask(a): a with the elements above the diagonal -inf; only x ⊑ it
};

class AbstractExpr;
using AbstractExprRef = std::shared_ptr<const AbstractExpr>;

// An immutable, hash-consed term node: structurally equal terms are the same object, so
// pointer equality is term equality. Factories are thread-safe.
class AbstractExpr {
  struct Passkey {};

 public:
  static AbstractExprRef input(const std::string& name);
  static AbstractExprRef constant(double value);
  static AbstractExprRef add(AbstractExprRef a, AbstractExprRef b);
  static AbstractExprRef mul(AbstractExprRef a, AbstractExprRef b);
  static AbstractExprRef div(AbstractExprRef a, AbstractExprRef b);
  static AbstractExprRef exp(AbstractExprRef a);
  // A sum of one term is the term itself: sum(1, a) returns a.
  static AbstractExprRef sum(int64_t n, AbstractExprRef a);
  static AbstractExprRef sqrt(AbstractExprRef a);
  static AbstractExprRef silu(AbstractExprRef a);
  static AbstractExprRef sigmoid(AbstractExprRef a);
  static AbstractExprRef tanh(AbstractExprRef a);
  static AbstractExprRef erf(AbstractExprRef a);
  static AbstractExprRef relu(AbstractExprRef a);
  static AbstractExprRef max(int64_t n, AbstractExprRef a);  // max(1, a) returns a
  static AbstractExprRef rmsNorm(int64_t n, AbstractExprRef a);
  static AbstractExprRef rotateHalf(AbstractExprRef a);
  static AbstractExprRef rotatePairs(AbstractExprRef a);
  static AbstractExprRef causalMask(AbstractExprRef a);

  ExprKind kind() const { return kind_; }
  const std::string& name() const { return name_; }  // Input only
  double value() const { return value_; }            // Const only
  int64_t extent() const { return extent_; }         // Sum, Max, RmsNorm
  const std::vector<AbstractExprRef>& operands() const { return operands_; }
  // Canonical text, e.g. "sum(64,mul(Q,K))"; equal strings mean equal terms.
  const std::string& str() const { return text_; }

  AbstractExpr(Passkey, ExprKind kind, std::string name, double value, int64_t extent,
               std::vector<AbstractExprRef> operands, std::string text);

 private:
  static AbstractExprRef make(ExprKind kind, std::string name, double value, int64_t extent,
                              std::vector<AbstractExprRef> operands);

  ExprKind kind_;
  std::string name_;
  double value_;
  int64_t extent_;
  std::vector<AbstractExprRef> operands_;
  std::string text_;
};

// The term of every kernel-level tensor of `graph`, indexed by TensorId. Block-graph kernels
// are evaluated symbolically with their tile extents. Throws graph::IrError on a malformed
// graph (an operand used before it is defined).
std::vector<AbstractExprRef> abstractExpressions(const graph::KernelGraph& graph);

// The term of every block tensor of a (possibly partial) block graph, indexed by block
// TensorId; `kernelInputs[i]` is the term of the kernel op's i-th input. Tensors that no op
// of `block` produces yet are null. With the kernel inputs' shapes, a reduction over a partial
// dim (graph/tile_splits.h) counts ⌊n / parts⌋ terms, so the reduction and its accumulation
// together name a part of the whole sum or max (axioms "prefix-sum", "prefix-max").
std::vector<AbstractExprRef> abstractExpressionsOfBlock(
    const graph::BlockGraph& block, const std::vector<AbstractExprRef>& kernelInputs,
    const std::vector<graph::Dims>* kernelInputShapes = nullptr);

// The form the oracle reasons about: nested sums and maxes merged (sum(m, sum(n, x)) =
// sum(m*n, x)), the operands of add and mul ordered by their text, x * const(1) = x, and,
// unless `keepShifts`, the softmax shift laws (a − max = a, exp(max) = 1). Equivalent under
// the axioms to `expr`.
AbstractExprRef canonicalize(const AbstractExprRef& expr, bool keepShifts = false);

}  // namespace mugraph::verify
