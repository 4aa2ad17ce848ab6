#include "verify/fingerprint.h"

#include <random>
#include <string>

#include "verify/interpreter.h"
#include "verify/reference_cache.h"

namespace mugraph::verify {

TensorMap<FieldElement> randomFieldInputs(const graph::KernelGraph& graph, uint64_t seed) {
  std::mt19937_64 generator(seed);
  // Rejection sampling keeps both parts exactly uniform.
  auto uniformBelow = [&generator](uint64_t bound) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t x;
    do x = generator();
    while (x >= limit);
    return static_cast<uint32_t>(x % bound);
  };
  TensorMap<FieldElement> inputs;
  for (graph::TensorId id : graph.inputs) {
    const graph::TensorDesc& desc = graph.tensors[id];
    HostTensor<FieldElement> tensor{desc.shape, {}};
    tensor.data.resize(static_cast<size_t>(graph::elementCount(desc.shape)));
    for (FieldElement& v : tensor.data) {
      v.a = uniformBelow(FieldParameters::p);
      v.b = uniformBelow(FieldParameters::q);
    }
    inputs[desc.name] = std::move(tensor);
  }
  return inputs;
}

TrialMeaning trialMeaning(uint64_t seed, bool arbitraryMax) {
  return TrialMeaning{field::mix64(seed ^ 0x6d61782d6f726465ULL), arbitraryMax};
}

namespace {

// Where two evaluations' outputs first differ ("" where they agree): the q-part is compared
// only where both sides still carry one.
std::string firstDifference(const TensorMap<FieldElement>& expected,
                            const TensorMap<FieldElement>& actual) {
  for (const auto& [name, want] : expected) {
    const HostTensor<FieldElement>& got = actual.at(name);
    for (size_t i = 0; i < want.data.size(); ++i) {
      const FieldElement& x = want.data[i];
      const FieldElement& y = got.data[i];
      const bool qDiffers = x.hasQPart() && y.hasQPart() && x.b != y.b;
      if (x.a != y.a || qDiffers) {
        return "output '" + name + "' element " + std::to_string(i) + " differs in the finite field";
      }
    }
  }
  return "";
}

}  // namespace

bool outputsDependOnMax(const graph::KernelGraph& graph, uint64_t seed) {
  const TensorMap<FieldElement> inputs = randomFieldInputs(graph, seed);
  TrialMeaning meaning = trialMeaning(seed, /*arbitraryMax=*/true);
  const TensorMap<FieldElement> first = evaluate(graph, inputs, meaning);
  meaning.maxSalt = field::mix64(seed ^ 0x73616c742d6d6178ULL) | 1;
  return !firstDifference(first, evaluate(graph, inputs, meaning)).empty();
}

TrialOutcome runFingerprintTrial(const graph::KernelGraph& reference,
                                 const graph::KernelGraph& candidate, uint64_t seed,
                                 ReferenceEvaluations* cache, bool arbitraryMax) {
  const TensorMap<FieldElement> inputs = randomFieldInputs(reference, seed);
  const TrialMeaning meaning = trialMeaning(seed, arbitraryMax);
  const TensorMap<FieldElement> expected =
      cache ? cache->fieldOutputs(inputs, seed, meaning) : evaluate(reference, inputs, meaning);
  const std::string difference = firstDifference(expected, evaluate(candidate, inputs, meaning));
  if (!difference.empty()) return TrialOutcome{false, difference};
  return TrialOutcome{};
}

}  // namespace mugraph::verify
