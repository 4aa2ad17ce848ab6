#include "verify/reference_cache.h"

#include "graph/hash.h"
#include "verify/interpreter.h"

namespace mugraph::verify {
namespace {

template <class T, class Key>
TensorMap<T> cached(std::mutex& mutex, std::map<Key, TensorMap<T>>& cache, const Key& key,
                    const graph::KernelGraph& graph, const TensorMap<T>& inputs,
                    const TrialMeaning& meaning = {}) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = cache.find(key);
    if (found != cache.end()) return found->second;
  }
  TensorMap<T> outputs = evaluate(graph, inputs, meaning);
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(key, outputs);
  return outputs;
}

}  // namespace

ReferenceEvaluations::ReferenceEvaluations(graph::KernelGraph reference)
    : reference_(std::move(reference)), hash_(graph::kernelGraphHash(reference_)) {}

TensorMap<double> ReferenceEvaluations::floatOutputs(const TensorMap<double>& inputs, uint64_t seed,
                                                     double scale) {
  return cached(mutex_, floats_, std::make_pair(seed, scale), reference_, inputs);
}

// The trial's meaning is drawn from the seed (fingerprint.h), so (seed, mode) names the evaluation.
TensorMap<FieldElement> ReferenceEvaluations::fieldOutputs(const TensorMap<FieldElement>& inputs,
                                                           uint64_t seed,
                                                           const TrialMeaning& meaning) {
  return cached(mutex_, fields_, std::make_pair(seed, meaning.arbitraryMax), reference_, inputs,
                meaning);
}

ReferenceEvaluations::DegreeEvaluation ReferenceEvaluations::degreeOutputs(
    const TensorMap<DegreeValue>& inputs, uint64_t seed) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = degrees_.find(seed);
    if (found != degrees_.end()) return found->second;
  }
  ArgumentTally tally;
  TrialMeaning meaning;
  meaning.arguments = &tally;
  DegreeEvaluation evaluation{evaluate(reference_, inputs, meaning), {}};
  evaluation.arguments = tally.counts();
  std::lock_guard<std::mutex> lock(mutex_);
  degrees_.emplace(seed, evaluation);
  return evaluation;
}

}  // namespace mugraph::verify
