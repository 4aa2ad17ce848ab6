// Equivalence checking of two programs or schedules: float tests in double at several input
// scales, then (where every op has a field meaning) k independent finite-field fingerprint
// trials whose false-accept bound is stated. Each verdict names the seed that replays it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "verify/scaled_twin.h"

namespace mugraph::verify {

enum class VerificationLevel { FiniteField, FloatOnly };
const char* levelName(VerificationLevel level);  // "finite-field", "float-only"

struct EquivalenceOptions {
  uint64_t seed = 0;
  std::optional<int> trials;  // default: fewest trials reaching targetBound
  double targetBound = 1e-12;
  int maxTrials = 64;
  std::vector<double> floatScales = {0.125, 0.5, 1.0};
  // For attention programs (verify::inputStdForLogitStd), float tests also on normal inputs
  // whose logits have these standard deviations: the spread of real models.
  std::vector<double> floatLogitSpreads = {4.0, 16.0};
  double floatTolerance = 1e-9;
  // Check on scaled twins (verify/scaled_twin.h) where map dims can shrink; false: always at
  // the real shapes.
  bool scaledTwin = true;
  // Reused evaluations of the reference (the search checks many candidates against one
  // program with one seed); ignored unless it was made for this very reference graph.
  std::shared_ptr<class ReferenceEvaluations> referenceCache;
};

struct EquivalenceReport {
  bool equivalent = false;
  VerificationLevel level = VerificationLevel::FloatOnly;
  std::string levelReason;  // why fingerprints were not used, for float-only
  int trials = 0;           // fingerprint trials run
  int resampledTrials = 0;  // trials drawn again after hitting a zero divisor
  uint64_t seed = 0;
  int64_t degree = 0;
  double perTrialBound = 1.0;
  double falseAcceptBound = 1.0;  // 1.0 when no fingerprint was taken
  double maxRelError = 0.0;       // float tests, max over scales and outputs
  std::string mismatch;           // first difference found, if any
  // How max was treated (verify/README.md, "max"): "" when neither graph takes a max;
  // "any" when the fingerprints agreed with max returning a random function of its operands,
  // so the outputs do not depend on what max returns; "selection" when they agreed only with
  // max selecting by each trial's random total order.
  std::string maxMeaning;
  // The map dims shrunk for the check (ScaledTwin::describe), "" when the real shapes were
  // checked; and the factor by which that cut the matmuls' work.
  std::string scaledTwin;
  std::vector<ShrunkDim> scaledTwinDims;
  double scaledTwinWorkRatio = 1.0;
};

// Checks that `candidate` computes the same outputs as `reference` (inputs and outputs are
// matched by name; UserError if the interfaces differ).
EquivalenceReport checkEquivalence(const graph::KernelGraph& reference,
                                   const graph::KernelGraph& candidate,
                                   const EquivalenceOptions& options);

// Throws UserError naming the first input or output on which the two interfaces disagree.
void requireSameInterface(const graph::KernelGraph& reference, const graph::KernelGraph& candidate);

}  // namespace mugraph::verify
