// The false-accept bound of fingerprint testing: how likely k trials are to call two
// different programs equivalent. It is computed from the degree of the difference of the two
// programs' outputs (as rational functions, measured by running the interpreter over the
// degree domain) and the field sizes; see docs in verify/README.md.
//
// Per trial: ε = D / p for exp-free programs (Schwartz–Zippel over F_p), ε = D / q when exp
// occurs (exp values range over the order-q subgroup and are modelled as independent, as in
// Mirage's theorem), each random function's value (sqrt, silu, exp of an exp) counted as a
// fresh variable; plus the probability that two distinct values the trial hashes or compares
// collide: arguments of a random function (a union bound over pairs of applications) and, where max selects, the two operands of one max (a union bound over max's
// comparisons). k independent trials: ε^k.
#pragma once

#include <cstdint>
#include <optional>

#include "graph/ir.h"
#include "verify/degree_domain.h"

namespace mugraph::verify {
class ReferenceEvaluations;
}

namespace mugraph::verify {

// What max means in the trials a bound is for (verify/README.md, "max").
enum class MaxMeaning {
  Any,        // a random function of its operands' p-parts: no tie to pay for
  Selection,  // selection by the trial's random order of p-parts
};

struct DegreeReport {
  int64_t degree = 0;  // max over output elements of deg(N_a·D_b − N_b·D_a)
  bool usesExp = false;
  // The random functions the outputs depend on (degree_domain.h): the largest degree of an
  // argument whose two field parts are independent evaluations, and of one whose p-part alone
  // is (-1: none; rounded up to a power of two, degree::traits::kUnbounded above 2^13); and how
  // many times both graphs apply a random function in all, an upper bound on the number of distinct
  // arguments.
  int64_t argumentDegree = -1;
  int64_t argumentDegreePPart = -1;
  int64_t applications = 0;
  // Both graphs' applications whose argument keeps both parts, by the argument's exact degree
  // (differenceDegree counts them as it evaluates; absent in a report made otherwise).
  std::optional<ArgumentCounts> bothPartsArguments;
  // The same for max: the largest degree of an operand the outputs depend on (-1: none, rounded
  // alike), and how many times both graphs compare two operands in all.
  int64_t maxOperandDegree = -1;
  int64_t maxComparisons = 0;
};

// Degree of the difference of `a` and `b` (same inputs and outputs by name), both evaluated
// over the degree domain. Throws OutsideFieldFragment for ops with no field meaning.
// `cache`, if given, holds `a`'s evaluations (see reference_cache.h).
DegreeReport differenceDegree(const graph::KernelGraph& a, const graph::KernelGraph& b,
                              uint64_t seed, ReferenceEvaluations* cache = nullptr);

// The Schwartz–Zippel part: D / p, or D / q with exp.
double perTrialBound(int64_t degree, bool usesExp);
// Probability that two distinct values the trial hashes or compares collide.
// Random-function arguments: for each of the N(N−1)/2 pairs of applications, two distinct
// arguments differ by a rational function whose numerator has degree at most 2d (d the largest
// argument degree, as recorded). Where both parts are independent evaluations the function
// keys on both, and they agree with probability at most (2d/p)·(2d/q); where the p-part alone
// is free, at most 2d/q (a value without a q-part never keys like one with). With
// `bothPartsArguments`, the pairs of applications keyed on both parts are also summed with each
// pair's own larger degree, plus N(N−1)/2 · 2d/q for pairs where the p-part alone is free, and
// the smaller of the two sums is the term. Under `Selection`, plus
// 2d/q for each of max's comparisons (d the largest operand degree): two distinct operands that
// tie make max return neither.
double collisionBound(const DegreeReport& report, MaxMeaning meaning);
// One trial: min(1, perTrialBound(D, usesExp) + collisionBound).
double perTrialBound(const DegreeReport& report, MaxMeaning meaning);
double falseAcceptBound(double perTrial, int trials);  // perTrial^trials
// Trials run where the per-trial bound is 1, which no number of trials lowers.
inline constexpr int kTrialsWithoutBound = 2;
// Fewest trials whose bound is at most `target` (at least 1), capped at `maxTrials`; where
// `perTrial` is 1, kTrialsWithoutBound (capped).
int trialsForBound(double perTrial, double target, int maxTrials);

}  // namespace mugraph::verify
