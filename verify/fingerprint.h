// One fingerprint trial: both graphs evaluated over the finite field on the same uniformly
// random inputs (each element an independent pair (a mod p, b mod q)), outputs compared.
#pragma once

#include <cstdint>
#include <string>

#include "graph/ir.h"
#include "verify/finite_field.h"
#include "verify/host_tensor.h"

namespace mugraph::verify {

class ReferenceEvaluations;

TensorMap<FieldElement> randomFieldInputs(const graph::KernelGraph& graph, uint64_t seed);

struct TrialOutcome {
  bool match = true;
  std::string mismatch;  // "output 'O' element 17 differs"
};

// Evaluates both graphs on one draw. Throws ZeroDivisorInTrial (draw again) or
// OutsideFieldFragment (fingerprints cannot decide).
// `cache`, if given, holds the reference's evaluations (see reference_cache.h).
// Both graphs see the same meaning of max and of the uninterpreted ops: its key is drawn from
// `seed`, so each trial has its own random total order for max (or random function, with
// `arbitraryMax`) and its own random function per uninterpreted op.
TrialOutcome runFingerprintTrial(const graph::KernelGraph& reference,
                                 const graph::KernelGraph& candidate, uint64_t seed,
                                 ReferenceEvaluations* cache = nullptr, bool arbitraryMax = false);

// The meaning of the trial drawn from `seed`.
TrialMeaning trialMeaning(uint64_t seed, bool arbitraryMax);

}  // namespace mugraph::verify
