#include "verify/relative_error.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "graph/error.h"

namespace mugraph::verify {

double normwiseRelativeError(std::span<const double> reference, std::span<const double> candidate) {
  if (reference.size() != candidate.size()) {
    throw UserError("relative error", "the reference has " + std::to_string(reference.size()) +
                                          " values, the candidate " +
                                          std::to_string(candidate.size()));
  }
  constexpr double kUnbounded = std::numeric_limits<double>::infinity();
  double maxDifference = 0.0;
  double maxReference = 0.0;
  for (size_t i = 0; i < reference.size(); ++i) {
    if (!std::isfinite(reference[i]) || !std::isfinite(candidate[i])) return kUnbounded;
    maxDifference = std::max(maxDifference, std::abs(reference[i] - candidate[i]));
    maxReference = std::max(maxReference, std::abs(reference[i]));
  }
  if (maxDifference == 0.0) return 0.0;
  if (maxReference == 0.0) return kUnbounded;
  return maxDifference / maxReference;
}

double maxRelativeError(const TensorMap<double>& reference, const TensorMap<double>& candidate) {
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
    worst = std::max(worst, normwiseRelativeError(ref.data, cand.data));
  }
  return worst;
}

}  // namespace mugraph::verify
