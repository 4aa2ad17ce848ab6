// Random program inputs and the normwise error measure of float tests. The uniform draw is
// done by hand from mt19937_64's bits (not std::uniform_real_distribution, whose output
// differs between standard libraries) so a seed means the same inputs everywhere.
#include "verify/random_inputs.h"

#include <cmath>
#include <limits>
#include <random>

#include "graph/error.h"

namespace mugraph::verify {

TensorMap<double> randomInputs(const graph::Program& program, uint64_t seed, double scale) {
  std::mt19937_64 generator(seed);
  TensorMap<double> inputs;
  for (graph::TensorId id : program.inputs) {
    const graph::TensorDesc& desc = program.tensors.at(id);
    HostTensor<double> tensor{desc.shape, std::vector<double>(graph::elementCount(desc.shape))};
    for (double& value : tensor.data) {
      const double unit = static_cast<double>(generator() >> 11) * 0x1.0p-53;  // [0, 1)
      value = scale * (2.0 * unit - 1.0);
    }
    inputs[desc.name] = std::move(tensor);
  }
  return inputs;
}

// Any NaN or infinity, in either tensor, counts as an infinite error: a comparison that
// involves one can never pass a tolerance.
double maxRelativeError(const TensorMap<double>& reference, const TensorMap<double>& candidate) {
  constexpr double kFailure = std::numeric_limits<double>::infinity();
  for (const auto& [name, tensor] : candidate) {
    if (!reference.count(name)) {
      throw UserError("output '" + name + "'", "is not an output of the reference");
    }
  }
  double worst = 0.0;
  for (const auto& [name, ref] : reference) {
    const std::string where = "output '" + name + "'";
    const auto found = candidate.find(name);
    if (found == candidate.end()) throw UserError(where, "is missing from the candidate");
    const HostTensor<double>& cand = found->second;
    if (ref.shape != cand.shape) {
      throw UserError(where, "has shape " + graph::formatDims(cand.shape) +
                                 " but the reference has " + graph::formatDims(ref.shape));
    }
    if (ref.data.size() != cand.data.size() ||
        static_cast<int64_t>(ref.data.size()) != graph::elementCount(ref.shape)) {
      throw UserError(where, "does not hold as many values as its shape has elements");
    }
    double maxDifference = 0.0;
    double maxReference = 0.0;
    for (size_t i = 0; i < ref.data.size(); ++i) {
      if (!std::isfinite(ref.data[i]) || !std::isfinite(cand.data[i])) return kFailure;
      maxDifference = std::max(maxDifference, std::abs(ref.data[i] - cand.data[i]));
      maxReference = std::max(maxReference, std::abs(ref.data[i]));
    }
    if (maxDifference == 0.0) continue;
    if (maxReference == 0.0) return kFailure;
    worst = std::max(worst, maxDifference / maxReference);
  }
  return worst;
}

}  // namespace mugraph::verify
