// The search's pruning oracle: may a candidate term be part of (a subexpression of a term
// equivalent to) the program's output term under the axioms of axioms.h? Cheap structural
// checks answer most queries; the rest go to Z3, one context per thread, cached by term.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "verify/abstract_expr.h"

namespace mugraph::verify {

struct OracleOptions {
  // Deterministic Z3 resource limit per query ("rlimit"); the wall-clock timeout is only a
  // safety net. A query stopped by either is answered "possible" and counted in timeouts.
  // Proved and saturated answers do not depend on the thread or on earlier queries; an answer
  // at the limit may (Z3's term order follows the context's history), and it is always true.
  // GQA and GEMM queries use about 4k; a 6-leaf add/mul target saturates in about 2.4M.
  unsigned rlimit = 3'000'000;
  unsigned timeoutMs = 5'000;
  // A query asked after this time does not go to Z3 (answered "possible", uncached); one
  // asked before it stops there. A time-limited search sets it (search/superoptimize.cpp).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

struct OracleStats {
  uint64_t queries = 0;           // isPossibleSubexpression and isEquivalent calls
  uint64_t cacheHits = 0;         // answered from the cache
  uint64_t precheckAccepted = 0;  // literal subterm (or literal partial sum) of a target
  uint64_t precheckRejected = 0;  // an input, constant or op no equivalent target can hold
  uint64_t z3Queries = 0;         // went to Z3
  uint64_t z3Proved = 0;          // Z3 derived it from the axioms
  uint64_t z3Refuted = 0;         // Z3 found no derivation after exhausting the instances
  uint64_t timeouts = 0;          // Z3 hit the resource limit or timeout: answered true
  uint64_t z3Errors = 0;          // Z3 raised an error: answered true
  uint64_t pastDeadline = 0;      // asked past OracleOptions::deadline: answered true
  double z3Seconds = 0;           // wall time spent inside Z3, all threads together
};

// Answers, for the fixed targets (the program's output terms), whether a candidate term
// c ⊑ t' holds for some t' equivalent to a target. Thread-safe; call it from any TBB task.
//
// What the answers mean: true when Z3 derives the relation, or when Z3 stops at its limit
// (pruning must never lose a schedule to a timeout); false when the candidate holds an input,
// constant or op that no equivalent of a target can hold, or when e-matching saturates (every
// axiom instance over the terms reached has been tried) without a derivation. Abstract
// expressions are a heuristic (sum-div is unsound in general); fingerprints decide equivalence.
class SubexpressionOracle {
 public:
  explicit SubexpressionOracle(std::vector<AbstractExprRef> targets, OracleOptions options = {});

  bool isPossibleSubexpression(const AbstractExprRef& candidate);
  // Whether a = b follows from the equivalence axioms; same answer policy as above.
  bool isEquivalent(const AbstractExprRef& a, const AbstractExprRef& b);

  OracleStats stats() const;
  const OracleOptions& options() const { return options_; }

 private:
  enum class Precheck { Accept, Reject, AskZ3 };
  Precheck precheck(const AbstractExprRef& candidate) const;
  bool lookup(const std::string& key, bool& answer);
  void remember(const std::string& key, bool answer);
  enum class Claim { InSomeTarget, EqualTerms };
  // Asserts the negation of the claim about `a` (and `b` for EqualTerms) next to the
  // axioms; unsat proves the claim. Applies the answer policy above and counts the outcome.
  // Nothing past the deadline (the caller answers true and caches nothing).
  std::optional<bool> decideWithZ3(Claim claim, const AbstractExprRef& a,
                                   const AbstractExprRef& b = nullptr);

  std::vector<AbstractExprRef> targets_;         // canonical forms
  std::vector<AbstractExprRef> shiftedTargets_;  // shifts kept: for the precheck's subterms
  OracleOptions options_;
  std::unordered_set<const AbstractExpr*> targetSubterms_;
  std::unordered_set<std::string> targetLeaves_;  // inputs and constants, by text
  std::unordered_set<int> targetOps_;             // ExprKind values, closed under exp-add

  mutable std::mutex cacheMutex_;
  std::unordered_map<std::string, bool> cache_;

  std::atomic<uint64_t> queries_{0}, cacheHits_{0}, precheckAccepted_{0}, precheckRejected_{0},
      z3Queries_{0}, z3Proved_{0}, z3Refuted_{0}, timeouts_{0}, z3Errors_{0}, pastDeadline_{0};
  std::atomic<int64_t> z3Microseconds_{0};
};

}  // namespace mugraph::verify
