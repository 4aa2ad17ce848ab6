// The false-accept bound of fingerprint testing: how likely k trials are to call two
// different programs equivalent. It is computed from the degree of the difference of the two
// programs' outputs (as rational functions, measured by running the interpreter over the
// degree domain) and the field sizes; see docs in verify/README.md.
//
// Per trial: ε = D / p for exp-free programs (Schwartz–Zippel over F_p), ε = D / q when exp
// occurs (exp values range over the order-q subgroup and are modelled as independent, as in
// Mirage's theorem). k independent trials: ε^k.
#pragma once

#include <cstdint>

#include "graph/ir.h"

namespace mugraph::verify {
class ReferenceEvaluations;
}

namespace mugraph::verify {

struct DegreeReport {
  int64_t degree = 0;  // max over output elements of deg(N_a·D_b − N_b·D_a)
  bool usesExp = false;
};

// Degree of the difference of `a` and `b` (same inputs and outputs by name), both evaluated
// over the degree domain. Throws OutsideFieldFragment for ops with no field meaning.
// `cache`, if given, holds `a`'s evaluations (see reference_cache.h).
DegreeReport differenceDegree(const graph::KernelGraph& a, const graph::KernelGraph& b,
                              uint64_t seed, ReferenceEvaluations* cache = nullptr);

double perTrialBound(int64_t degree, bool usesExp);
double falseAcceptBound(double perTrial, int trials);  // perTrial^trials
// Fewest trials whose bound is at most `target` (at least 1), capped at `maxTrials`.
int trialsForBound(double perTrial, double target, int maxTrials);

}  // namespace mugraph::verify
