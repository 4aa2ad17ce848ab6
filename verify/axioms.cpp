// The axiom table of abstract expressions (read it top to bottom) and the DSL that turns each
// law into a quantified Z3 formula with e-matching triggers.
#include "verify/axioms.h"

#include <stdexcept>
#include <string>

namespace mugraph::verify {

AxiomVocabulary::AxiomVocabulary(z3::context& context)
    : ctx(context),
      term(context.uninterpreted_sort("Term")),
      add(context.function("add", term, term, term)),
      mul(context.function("mul", term, term, term)),
      div(context.function("div", term, term, term)),
      exp(context.function("exp", term, term)),
      sum(context.function("sum", context.int_sort(), term, term)),
      sqrt(context.function("sqrt", term, term)),
      silu(context.function("silu", term, term)),
      sigmoid(context.function("sigmoid", term, term)),
      tanh(context.function("tanh", term, term)),
      erf(context.function("erf", term, term)),
      relu(context.function("relu", term, term)),
      max(context.function("max", context.int_sort(), term, term)),
      rmsNorm(context.function("rms_norm", context.int_sort(), term, term)),
      rotateHalf(context.function("rotate_half", term, term)),
      rotatePairs(context.function("rotate_pairs", term, term)),
      causalMask(context.function("causal_mask", term, term)),
      constant(context.function("const", context.real_sort(), term)),
      contains(context.function("contains", term, context.bool_sort())) {}

AxiomDsl::AxiomDsl(const AxiomVocabulary& vocabulary)
    : a(vocabulary.ctx.constant("a", vocabulary.term)),
      b(vocabulary.ctx.constant("b", vocabulary.term)),
      c(vocabulary.ctx.constant("c", vocabulary.term)),
      x(vocabulary.ctx.constant("x", vocabulary.term)),
      y(vocabulary.ctx.constant("y", vocabulary.term)),
      m(vocabulary.ctx.int_const("m")),
      n(vocabulary.ctx.int_const("n")),
      k(vocabulary.ctx.int_const("k")),
      r(vocabulary.ctx.real_const("r")),
      v_(vocabulary) {}

namespace {

bool occurs(const z3::expr& variable, const z3::expr& in) {
  if (z3::eq(variable, in)) return true;
  if (!in.is_app()) return false;
  for (unsigned i = 0; i < in.num_args(); ++i) {
    if (occurs(variable, in.arg(i))) return true;
  }
  return false;
}

}  // namespace

z3::expr AxiomDsl::forall(const z3::expr& body,
                          const std::vector<std::vector<z3::expr>>& triggers) const {
  z3::context& ctx = v_.ctx;
  std::vector<Z3_app> bound;
  for (const z3::expr& variable : {a, b, c, x, y, m, n, k, r}) {
    if (occurs(variable, body)) bound.push_back(Z3_to_app(ctx, variable));
  }
  std::vector<Z3_pattern> patterns;
  z3::ast_vector keepAlive(ctx);  // Z3 frees an unreferenced pattern at the next API call
  for (const std::vector<z3::expr>& trigger : triggers) {
    std::vector<Z3_ast> terms;
    bool coversAll = true;
    for (Z3_app variable : bound) {
      z3::expr var(ctx, Z3_app_to_ast(ctx, variable));
      bool covered = false;
      for (const z3::expr& term : trigger) covered = covered || occurs(var, term);
      coversAll = coversAll && covered;
    }
    if (!coversAll) continue;
    for (const z3::expr& term : trigger) terms.push_back(term);
    Z3_pattern pattern = Z3_mk_pattern(ctx, static_cast<unsigned>(terms.size()), terms.data());
    keepAlive.push_back(z3::ast(ctx, Z3_pattern_to_ast(ctx, pattern)));
    patterns.push_back(pattern);
  }
  if (patterns.empty()) {
    throw std::logic_error("axiom without a usable trigger: " + body.to_string());
  }
  Z3_ast quantified =
      Z3_mk_forall_const(ctx, 0, static_cast<unsigned>(bound.size()), bound.data(),
                         static_cast<unsigned>(patterns.size()), patterns.data(), body);
  ctx.check_error();
  return z3::expr(ctx, quantified);
}

z3::expr AxiomDsl::equation(const z3::expr& lhs, const z3::expr& rhs) const {
  return forall(lhs == rhs, {{lhs}, {rhs}});
}

z3::expr AxiomDsl::rewrite(const z3::expr& lhs, const z3::expr& rhs) const {
  return forall(lhs == rhs, {{lhs}});
}

z3::expr AxiomDsl::within(const z3::expr& part, const z3::expr& whole) const {
  return forall(z3::implies(v_.contains(part), v_.contains(whole)), {{whole}});
}

z3::expr AxiomDsl::withinIf(const z3::expr& part, const z3::expr& whole,
                            const z3::expr& condition) const {
  return forall(z3::implies(v_.contains(part) && condition, v_.contains(whole)), {{part, whole}});
}

// The table. Equivalence laws hold for real numbers except sum-div (see its note); the
// subexpression laws say which terms a prefix may compute on its way to the output. Sum
// extents are integers: the term layer merges literally nested sums before Z3 sees them
// (canonicalize), and sum-split only fires forward, where Z3 folds m*n of two numerals.
const std::vector<Axiom>& axiomTable() {
  using K = AxiomKind;
  using D = AxiomDsl;
  static const std::vector<Axiom> table = {
      // clang-format off
      {"add-comm", K::Equivalence, "a + b = b + a",
       [](const D& d) { return d.rewrite(d.add(d.a, d.b), d.add(d.b, d.a)); }},
      {"add-assoc", K::Equivalence, "(a + b) + c = a + (b + c)",
       [](const D& d) { return d.equation(d.add(d.add(d.a, d.b), d.c),
                                          d.add(d.a, d.add(d.b, d.c))); }},
      {"mul-comm", K::Equivalence, "a * b = b * a",
       [](const D& d) { return d.rewrite(d.mul(d.a, d.b), d.mul(d.b, d.a)); }},
      {"mul-assoc", K::Equivalence, "(a * b) * c = a * (b * c)",
       [](const D& d) { return d.equation(d.mul(d.mul(d.a, d.b), d.c),
                                          d.mul(d.a, d.mul(d.b, d.c))); }},
      {"mul-add-distrib", K::Equivalence, "a * (b + c) = a * b + a * c",
       [](const D& d) { return d.equation(d.mul(d.a, d.add(d.b, d.c)),
                                          d.add(d.mul(d.a, d.b), d.mul(d.a, d.c))); }},
      {"div-add", K::Equivalence, "(a + b) / c = a / c + b / c",
       [](const D& d) { return d.equation(d.div(d.add(d.a, d.b), d.c),
                                          d.add(d.div(d.a, d.c), d.div(d.b, d.c))); }},
      {"mul-div", K::Equivalence, "a * (b / c) = (a * b) / c",
       [](const D& d) { return d.equation(d.mul(d.a, d.div(d.b, d.c)),
                                          d.div(d.mul(d.a, d.b), d.c)); }},
      {"exp-add", K::Equivalence, "exp(a + b) = exp(a) * exp(b)",
       [](const D& d) { return d.equation(d.exp(d.add(d.a, d.b)),
                                          d.mul(d.exp(d.a), d.exp(d.b))); }},
      {"sum-add", K::Equivalence, "sum(n, a + b) = sum(n, a) + sum(n, b)",
       [](const D& d) { return d.equation(d.sum(d.n, d.add(d.a, d.b)),
                                          d.add(d.sum(d.n, d.a), d.sum(d.n, d.b))); }},
      {"sum-split", K::Equivalence, "sum(m, sum(n, x)) = sum(m * n, x)",
       [](const D& d) { return d.rewrite(d.sum(d.m, d.sum(d.n, d.x)), d.sum(d.m * d.n, d.x)); }},
      {"sum-interchange", K::Equivalence, "sum(m, sum(n, x)) = sum(n, sum(m, x))",
       [](const D& d) { return d.rewrite(d.sum(d.m, d.sum(d.n, d.x)),
                                         d.sum(d.n, d.sum(d.m, d.x))); }},
      {"sum-mul-const", K::Equivalence, "sum(n, a * const(r)) = sum(n, a) * const(r)",
       [](const D& d) { return d.equation(d.sum(d.n, d.mul(d.a, d.constant(d.r))),
                                          d.mul(d.sum(d.n, d.a), d.constant(d.r))); }},
      // Not sound in general: the divisor b may vary with the summation index. It is exactly
      // the step that attention's rescaling needs (the softmax denominator is constant along
      // the summed KV axis), and abstract expressions forget which axis is summed, so this is
      // a pruning heuristic; equivalence is decided by finite-field fingerprints.
      {"sum-div", K::Equivalence, "sum(n, a / b) = sum(n, a) / b",
       [](const D& d) { return d.equation(d.sum(d.n, d.div(d.a, d.b)),
                                          d.div(d.sum(d.n, d.a), d.b)); },
       false},

      {"max-split", K::Equivalence, "max(m, max(n, x)) = max(m * n, x)",
       [](const D& d) { return d.rewrite(d.max(d.m, d.max(d.n, d.x)), d.max(d.m * d.n, d.x)); }},
      {"mul-one", K::Equivalence, "a * const(1) = a",
       [](const D& d) { return d.rewrite(d.mul(d.a, d.constant(d.r.ctx().real_val(1))), d.a); }},
      // Not identities: a softmax is invariant to a shift by its row max, so wherever a max
      // is subtracted before exp (safe, online and split softmax) the shift cancels between
      // numerator and denominator, and exp of a max appears only as a rescaling factor. As
      // pruning heuristics they let those forms meet the program's term; the term layer
      // applies both eagerly (canonicalize), and fingerprints, with max an arbitrary
      // function, decide (verify/README.md).
      {"shift-drop", K::Equivalence, "a + const(-1) * max(n, x) = a",
       [](const D& d) { return d.rewrite(d.add(d.a, d.mul(d.constant(d.r.ctx().real_val(-1)),
                                                          d.max(d.n, d.x))),
                                         d.a); },
       false},
      {"shift-exp", K::Equivalence, "exp(max(n, x)) = const(1)",
       [](const D& d) { return d.rewrite(d.exp(d.max(d.n, d.x)),
                                         d.constant(d.r.ctx().real_val(1))); },
       false},

      {"in-add-left", K::Subexpression, "x ⊑ x + y",
       [](const D& d) { return d.within(d.x, d.add(d.x, d.y)); }},
      {"in-add-right", K::Subexpression, "y ⊑ x + y",
       [](const D& d) { return d.within(d.y, d.add(d.x, d.y)); }},
      {"in-mul-left", K::Subexpression, "x ⊑ x * y",
       [](const D& d) { return d.within(d.x, d.mul(d.x, d.y)); }},
      {"in-mul-right", K::Subexpression, "y ⊑ x * y",
       [](const D& d) { return d.within(d.y, d.mul(d.x, d.y)); }},
      {"in-div-numerator", K::Subexpression, "x ⊑ x / y",
       [](const D& d) { return d.within(d.x, d.div(d.x, d.y)); }},
      {"in-div-denominator", K::Subexpression, "y ⊑ x / y",
       [](const D& d) { return d.within(d.y, d.div(d.x, d.y)); }},
      {"in-exp", K::Subexpression, "x ⊑ exp(x)",
       [](const D& d) { return d.within(d.x, d.exp(d.x)); }},
      {"in-sum", K::Subexpression, "x ⊑ sum(n, x)",
       [](const D& d) { return d.within(d.x, d.sum(d.n, d.x)); }},
      {"in-sqrt", K::Subexpression, "x ⊑ sqrt(x)",
       [](const D& d) { return d.within(d.x, d.sqrt(d.x)); }},
      {"in-silu", K::Subexpression, "x ⊑ silu(x)",
       [](const D& d) { return d.within(d.x, d.silu(d.x)); }},
      {"in-sigmoid", K::Subexpression, "x ⊑ sigmoid(x)",
       [](const D& d) { return d.within(d.x, d.sigmoid(d.x)); }},
      {"in-tanh", K::Subexpression, "x ⊑ tanh(x)",
       [](const D& d) { return d.within(d.x, d.tanh(d.x)); }},
      {"in-erf", K::Subexpression, "x ⊑ erf(x)",
       [](const D& d) { return d.within(d.x, d.erf(d.x)); }},
      {"in-relu", K::Subexpression, "x ⊑ relu(x)",
       [](const D& d) { return d.within(d.x, d.relu(d.x)); }},
      {"in-max", K::Subexpression, "x ⊑ max(n, x)",
       [](const D& d) { return d.within(d.x, d.max(d.n, d.x)); }},
      {"in-rms-norm", K::Subexpression, "x ⊑ rms_norm(n, x)",
       [](const D& d) { return d.within(d.x, d.rmsNorm(d.n, d.x)); }},
      {"in-rotate-half", K::Subexpression, "x ⊑ rotate_half(x)",
       [](const D& d) { return d.within(d.x, d.rotateHalf(d.x)); }},
      {"in-rotate-pairs", K::Subexpression, "x ⊑ rotate_pairs(x)",
       [](const D& d) { return d.within(d.x, d.rotatePairs(d.x)); }},
      {"in-causal-mask", K::Subexpression, "x ⊑ causal_mask(x)",
       [](const D& d) { return d.within(d.x, d.causalMask(d.x)); }},
      // A split reduction computes part of the sum (or max) first: a partial sum over m of the
      // k terms is a subexpression of the full one when m <= k (m need not divide k: with
      // partial tiles the parts are unequal, graph/tile_splits.h).
      {"prefix-sum", K::Subexpression, "sum(m, x) ⊑ sum(k, x) if m <= k",
       [](const D& d) { return d.withinIf(d.sum(d.m, d.x),
                                          d.sum(d.k, d.x), d.m >= 1 && d.m <= d.k); }},
      {"prefix-max", K::Subexpression, "max(m, x) ⊑ max(k, x) if m <= k",
       [](const D& d) { return d.withinIf(d.max(d.m, d.x),
                                          d.max(d.k, d.x), d.m >= 1 && d.m <= d.k); }},
      // clang-format on
  };
  return table;
}

}  // namespace mugraph::verify
