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

// Whether `graph`'s outputs depend on what max returns: evaluated on one draw of inputs from
// `seed` with max as two independent random functions (TrialMeaning::maxSalt), all else the
// same, do they differ? An output that does not depend on max (a softmax, whose max only
// shifts what exp sees and cancels) agrees always; one that does differs but with probability
// at most its degree over p (verify/README.md). Throws as runFingerprintTrial does.
bool outputsDependOnMax(const graph::KernelGraph& graph, uint64_t seed);

// The meaning of the trial drawn from `seed`.
TrialMeaning trialMeaning(uint64_t seed, bool arbitraryMax);

}  // namespace mugraph::verify
