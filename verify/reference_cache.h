// The reference side of equivalence checks, evaluated once and reused: the search checks
// dozens of candidates against one program with one seed, and the program's outputs on
// those inputs (double, finite field, degrees) are the same every time.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "graph/ir.h"
#include "verify/degree_domain.h"
#include "verify/finite_field.h"
#include "verify/host_tensor.h"

namespace mugraph::verify {

class ReferenceEvaluations {
 public:
  explicit ReferenceEvaluations(graph::KernelGraph reference);

  const graph::KernelGraph& reference() const { return reference_; }
  uint64_t referenceHash() const { return hash_; }

  // Outputs of the reference on the inputs drawn from (seed, scale) / seed; computed on first
  // use. Exceptions (a zero divisor, an op outside the field) propagate and nothing is kept.
  TensorMap<double> floatOutputs(const TensorMap<double>& inputs, uint64_t seed, double scale);
  TensorMap<FieldElement> fieldOutputs(const TensorMap<FieldElement>& inputs, uint64_t seed,
                                       const TrialMeaning& meaning);
  // The degree outputs with the evaluation's random-function arguments counted (degree_domain.h).
  struct DegreeEvaluation {
    TensorMap<DegreeValue> outputs;
    ArgumentCounts arguments;
  };
  DegreeEvaluation degreeOutputs(const TensorMap<DegreeValue>& inputs, uint64_t seed);

 private:
  graph::KernelGraph reference_;
  uint64_t hash_;
  std::mutex mutex_;
  std::map<std::pair<uint64_t, double>, TensorMap<double>> floats_;
  std::map<std::pair<uint64_t, bool>, TensorMap<FieldElement>> fields_;
  std::map<uint64_t, DegreeEvaluation> degrees_;
};

}  // namespace mugraph::verify
