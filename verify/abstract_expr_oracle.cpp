// SubexpressionOracle: structural prechecks, a thread-safe answer cache, and the Z3 query
// (one context and solver per thread, the axiom table asserted once, each query in a scope).
#include "verify/abstract_expr_oracle.h"

#include <algorithm>
#include <charconv>
#include <chrono>

#include "verify/axioms.h"

namespace mugraph::verify {
namespace {

// One per thread: Z3 contexts must not be shared between threads. The axioms stay asserted
// at the base level; each query pushes a scope and pops it.
struct ThreadSolver {
  ThreadSolver() {
    z3::params params(ctx);
    params.set("mbqi", false);  // e-matching only: saturation ends a query instead of looping
    solver.set(params);
    AxiomDsl dsl(vocabulary);
    for (const Axiom& axiom : axiomTable()) solver.add(axiom.formula(dsl));
  }

  z3::context ctx;
  AxiomVocabulary vocabulary{ctx};
  z3::solver solver{ctx};
};

ThreadSolver& threadSolver() {
  thread_local ThreadSolver state;
  return state;
}

void collect(const AbstractExprRef& expr, std::unordered_set<const AbstractExpr*>& seen) {
  if (!seen.insert(expr.get()).second) return;
  for (const AbstractExprRef& operand : expr->operands()) collect(operand, seen);
}

bool isLeaf(const AbstractExpr& expr) {
  return expr.kind() == ExprKind::Input || expr.kind() == ExprKind::Const;
}

bool isExtentPrefix(const AbstractExpr& part, const AbstractExpr& whole) {
  return part.kind() == whole.kind() &&
         (part.kind() == ExprKind::Sum || part.kind() == ExprKind::Max) &&
         part.operands()[0] == whole.operands()[0] && whole.extent() % part.extent() == 0;
}

std::string formatDecimal(double value) {
  char buffer[512];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::fixed);
  return std::string(buffer, result.ptr);
}

// Turns terms into Z3 expressions of the thread's vocabulary, sharing common subterms.
class Encoder {
 public:
  explicit Encoder(const AxiomVocabulary& vocabulary) : v_(vocabulary) {}

  z3::expr encode(const AbstractExprRef& expr) {
    auto found = memo_.find(expr.get());
    if (found != memo_.end()) return found->second;
    z3::expr result = encodeNode(*expr);
    memo_.emplace(expr.get(), result);
    return result;
  }

 private:
  z3::expr encodeNode(const AbstractExpr& expr) {
    z3::context& ctx = v_.ctx;
    const std::vector<AbstractExprRef>& in = expr.operands();
    auto extent = [&] { return ctx.int_val(expr.extent()); };
    switch (expr.kind()) {
      case ExprKind::Input:
        return ctx.constant(("input!" + expr.name()).c_str(), v_.term);
      case ExprKind::Const:
        return v_.constant(ctx.real_val(formatDecimal(expr.value()).c_str()));
      case ExprKind::Add:
        return v_.add(encode(in[0]), encode(in[1]));
      case ExprKind::Mul:
        return v_.mul(encode(in[0]), encode(in[1]));
      case ExprKind::Div:
        return v_.div(encode(in[0]), encode(in[1]));
      case ExprKind::Exp:
        return v_.exp(encode(in[0]));
      case ExprKind::Sum:
        return v_.sum(extent(), encode(in[0]));
      case ExprKind::Sqrt:
        return v_.sqrt(encode(in[0]));
      case ExprKind::Silu:
        return v_.silu(encode(in[0]));
      case ExprKind::Sigmoid:
        return v_.sigmoid(encode(in[0]));
      case ExprKind::Tanh:
        return v_.tanh(encode(in[0]));
      case ExprKind::Erf:
        return v_.erf(encode(in[0]));
      case ExprKind::Relu:
        return v_.relu(encode(in[0]));
      case ExprKind::Max:
        return v_.max(extent(), encode(in[0]));
      case ExprKind::RmsNorm:
        return v_.rmsNorm(extent(), encode(in[0]));
      case ExprKind::RotateHalf:
        return v_.rotateHalf(encode(in[0]));
      case ExprKind::RotatePairs:
        return v_.rotatePairs(encode(in[0]));
      case ExprKind::CausalMask:
        return v_.causalMask(encode(in[0]));
    }
    throw std::logic_error("unknown abstract expression kind");
  }

  const AxiomVocabulary& v_;
  std::unordered_map<const AbstractExpr*, z3::expr> memo_;
};

}  // namespace

SubexpressionOracle::SubexpressionOracle(std::vector<AbstractExprRef> targets,
                                         OracleOptions options)
    : options_(options) {
  for (const AbstractExprRef& target : targets) targets_.push_back(canonicalize(target));
  for (const AbstractExprRef& target : targets_) collect(target, targetSubterms_);
  // A safe softmax computes its max and the shifted logits on the way to the output; the
  // shift laws erase them from the canonical term, so the terms with the shifts kept count
  // as subterms too.
  for (const AbstractExprRef& target : targets) {
    shiftedTargets_.push_back(canonicalize(target, true));
    collect(shiftedTargets_.back(), targetSubterms_);
  }
  for (const AbstractExpr* subterm : targetSubterms_) {
    if (isLeaf(*subterm)) targetLeaves_.insert(subterm->str());
    targetOps_.insert(static_cast<int>(subterm->kind()));
  }
  // exp-add turns exp(a + b) into exp(a) * exp(b) and back: with exp, add and mul go together.
  bool hasExp = targetOps_.count(static_cast<int>(ExprKind::Exp)) > 0;
  bool hasAdd = targetOps_.count(static_cast<int>(ExprKind::Add)) > 0;
  bool hasMul = targetOps_.count(static_cast<int>(ExprKind::Mul)) > 0;
  if (hasExp && (hasAdd || hasMul)) {
    targetOps_.insert(static_cast<int>(ExprKind::Add));
    targetOps_.insert(static_cast<int>(ExprKind::Mul));
  }
}

// Necessary conditions that hold under every axiom: no axiom creates or drops a leaf, and
// only exp-add trades add for mul (inside an exp); every other op survives every rewrite.
SubexpressionOracle::Precheck SubexpressionOracle::precheck(
    const AbstractExprRef& candidate) const {
  if (targetSubterms_.count(candidate.get()) > 0) return Precheck::Accept;
  // A constant (exp of a max is const(1) under the shift laws) can be made on the way anywhere.
  if (candidate->kind() == ExprKind::Const) return Precheck::Accept;
  for (const AbstractExpr* subterm : targetSubterms_) {
    if (isExtentPrefix(*candidate, *subterm)) return Precheck::Accept;
  }
  std::unordered_set<const AbstractExpr*> candidateSubterms;
  collect(candidate, candidateSubterms);
  bool candidateHasExp = false;
  for (const AbstractExpr* subterm : candidateSubterms) {
    candidateHasExp = candidateHasExp || subterm->kind() == ExprKind::Exp;
  }
  for (const AbstractExpr* subterm : candidateSubterms) {
    // A constant can be made anywhere (exp of a max is const(1) under the shift laws).
    if (subterm->kind() == ExprKind::Input && targetLeaves_.count(subterm->str()) == 0) {
      return Precheck::Reject;
    }
    bool tradable =
        candidateHasExp && (subterm->kind() == ExprKind::Add || subterm->kind() == ExprKind::Mul);
    if (!tradable && targetOps_.count(static_cast<int>(subterm->kind())) == 0) {
      return Precheck::Reject;
    }
  }
  return Precheck::AskZ3;
}

bool SubexpressionOracle::lookup(const std::string& key, bool& answer) {
  std::lock_guard<std::mutex> lock(cacheMutex_);
  auto found = cache_.find(key);
  if (found == cache_.end()) return false;
  answer = found->second;
  return true;
}

void SubexpressionOracle::remember(const std::string& key, bool answer) {
  std::lock_guard<std::mutex> lock(cacheMutex_);
  cache_.emplace(key, answer);
}

bool SubexpressionOracle::isPossibleSubexpression(const AbstractExprRef& candidate) {
  ++queries_;
  AbstractExprRef canonical = canonicalize(candidate);
  const std::string& key = canonical->str();
  bool answer = false;
  if (lookup(key, answer)) {
    ++cacheHits_;
    return answer;
  }
  switch (precheck(canonical)) {
    case Precheck::Accept:
      ++precheckAccepted_;
      answer = true;
      break;
    case Precheck::Reject:
      ++precheckRejected_;
      answer = false;
      break;
    case Precheck::AskZ3: {
      const std::optional<bool> decided = decideWithZ3(Claim::InSomeTarget, canonical);
      if (!decided) return true;
      answer = *decided;
      break;
    }
  }
  remember(key, answer);
  return answer;
}

bool SubexpressionOracle::isEquivalent(const AbstractExprRef& a, const AbstractExprRef& b) {
  ++queries_;
  AbstractExprRef left = canonicalize(a);
  AbstractExprRef right = canonicalize(b);
  if (left == right) return true;
  std::string key = "equal:" + left->str() + "=" + right->str();
  bool answer = false;
  if (lookup(key, answer)) {
    ++cacheHits_;
    return answer;
  }
  const std::optional<bool> decided = decideWithZ3(Claim::EqualTerms, left, right);
  if (!decided) return true;
  answer = *decided;
  remember(key, answer);
  return answer;
}

std::optional<bool> SubexpressionOracle::decideWithZ3(Claim claim, const AbstractExprRef& a,
                                                      const AbstractExprRef& b) {
  auto start = std::chrono::steady_clock::now();
  if (start >= options_.deadline) {
    ++pastDeadline_;
    return std::nullopt;
  }
  ++z3Queries_;
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.deadline - start);
  const unsigned timeoutMs = static_cast<unsigned>(
      std::clamp<int64_t>(left.count() + 1, 1, static_cast<int64_t>(options_.timeoutMs)));
  ThreadSolver& state = threadSolver();
  bool answer = true;
  state.solver.push();
  try {
    Encoder encoder(state.vocabulary);
    if (claim == Claim::EqualTerms) {
      state.solver.add(encoder.encode(a) != encoder.encode(b));
    } else {
      state.solver.add(state.vocabulary.contains(encoder.encode(a)));
      // Only the canonical targets: the shifted forms' subtractions under exp set exp-add
      // and mul-add-distrib matching without end; their subterms are in the precheck.
      for (const AbstractExprRef& target : targets_) {
        state.solver.add(!state.vocabulary.contains(encoder.encode(target)));
      }
    }
    z3::params limits(state.ctx);
    limits.set("rlimit", options_.rlimit);
    limits.set("timeout", timeoutMs);
    state.solver.set(limits);
    z3::check_result result = state.solver.check();
    if (result == z3::unsat) {
      ++z3Proved_;
    } else if (result == z3::sat ||
               state.solver.reason_unknown().find("quantifiers") != std::string::npos) {
      ++z3Refuted_;
      answer = false;
    } else {
      ++timeouts_;
    }
  } catch (const z3::exception&) {
    ++z3Errors_;
  }
  state.solver.pop();
  auto elapsed = std::chrono::steady_clock::now() - start;
  z3Microseconds_ += std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
  return answer;
}

OracleStats SubexpressionOracle::stats() const {
  OracleStats s;
  s.queries = queries_;
  s.cacheHits = cacheHits_;
  s.precheckAccepted = precheckAccepted_;
  s.precheckRejected = precheckRejected_;
  s.z3Queries = z3Queries_;
  s.z3Proved = z3Proved_;
  s.z3Refuted = z3Refuted_;
  s.timeouts = timeouts_;
  s.pastDeadline = pastDeadline_;
  s.z3Errors = z3Errors_;
  s.z3Seconds = static_cast<double>(z3Microseconds_.load()) * 1e-6;
  return s;
}

}  // namespace mugraph::verify
