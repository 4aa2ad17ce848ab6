// The axioms of abstract expressions, as one table of data: each entry is a name, the law in
// ordinary notation and its Z3 formula, written in a tiny DSL (AxiomDsl). The oracle asserts
// the whole table once per Z3 context; nothing else in mugraph states an axiom.
#pragma once

#include <z3++.h>

#include <functional>
#include <string_view>
#include <vector>

namespace mugraph::verify {

// The Z3 signature terms are encoded in: an uninterpreted sort of terms, Int extents for
// sum/max/rms_norm, Real values for constants, and `contains(e)`, which means "the candidate
// of the current query is a subexpression of e". Using a unary predicate for a fixed candidate
// (instead of a binary subexpr relation with a transitivity axiom) makes ⊑ reflexive by
// asserting contains(candidate) and transitive by upward propagation, with one instance per
// term rather than one per pair of terms.
struct AxiomVocabulary {
  explicit AxiomVocabulary(z3::context& context);

  z3::context& ctx;
  z3::sort term;
  z3::func_decl add, mul, div, exp, sum, sqrt, silu, sigmoid, tanh, erf, relu, max, rmsNorm,
      rotateHalf, rotatePairs, causalMask, constant;
  z3::func_decl contains;
};

// Bound variables and constructors for writing one axiom. `equation` triggers on both sides
// (e-matching patterns), `rewrite` only on its left side (for a right side that is not a valid
// pattern, e.g. one holding integer arithmetic).
class AxiomDsl {
 public:
  explicit AxiomDsl(const AxiomVocabulary& vocabulary);

  z3::expr a, b, c, x, y;  // terms
  z3::expr m, n, k;        // extents
  z3::expr r;              // a constant's value

  z3::expr add(const z3::expr& p, const z3::expr& q) const { return v_.add(p, q); }
  z3::expr mul(const z3::expr& p, const z3::expr& q) const { return v_.mul(p, q); }
  z3::expr div(const z3::expr& p, const z3::expr& q) const { return v_.div(p, q); }
  z3::expr exp(const z3::expr& p) const { return v_.exp(p); }
  z3::expr sum(const z3::expr& extent, const z3::expr& p) const { return v_.sum(extent, p); }
  z3::expr sqrt(const z3::expr& p) const { return v_.sqrt(p); }
  z3::expr silu(const z3::expr& p) const { return v_.silu(p); }
  z3::expr sigmoid(const z3::expr& p) const { return v_.sigmoid(p); }
  z3::expr tanh(const z3::expr& p) const { return v_.tanh(p); }
  z3::expr erf(const z3::expr& p) const { return v_.erf(p); }
  z3::expr relu(const z3::expr& p) const { return v_.relu(p); }
  z3::expr max(const z3::expr& extent, const z3::expr& p) const { return v_.max(extent, p); }
  z3::expr rotateHalf(const z3::expr& p) const { return v_.rotateHalf(p); }
  z3::expr rotatePairs(const z3::expr& p) const { return v_.rotatePairs(p); }
  z3::expr causalMask(const z3::expr& p) const { return v_.causalMask(p); }
  z3::expr rmsNorm(const z3::expr& extent, const z3::expr& p) const {
    return v_.rmsNorm(extent, p);
  }
  z3::expr constant(const z3::expr& value) const { return v_.constant(value); }

  // ∀ vars. lhs = rhs, triggered by lhs and by rhs.
  z3::expr equation(const z3::expr& lhs, const z3::expr& rhs) const;
  // ∀ vars. lhs = rhs, triggered by lhs only.
  z3::expr rewrite(const z3::expr& lhs, const z3::expr& rhs) const;
  // ∀ vars. part ⊑ whole, triggered by `whole` (every variable must occur in it).
  z3::expr within(const z3::expr& part, const z3::expr& whole) const;
  // ∀ vars. (part ⊑ ... ∧ condition) → part ⊑ whole, triggered by the pair {part, whole}.
  z3::expr withinIf(const z3::expr& part, const z3::expr& whole, const z3::expr& condition) const;

 private:
  z3::expr forall(const z3::expr& body, const std::vector<std::vector<z3::expr>>& triggers) const;

  const AxiomVocabulary& v_;
};

enum class AxiomKind { Equivalence, Subexpression };

struct Axiom {
  std::string_view name;
  AxiomKind kind;
  std::string_view law;  // in ordinary notation, for readers and reports
  std::function<z3::expr(const AxiomDsl&)> formula;
  bool soundForAllInputs = true;  // false: a pruning heuristic only (see sum-div)
};

const std::vector<Axiom>& axiomTable();

}  // namespace mugraph::verify
