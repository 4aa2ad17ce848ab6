// The one measure of how far a computed tensor is from its reference: the normwise relative
// error. The verifier's float tests, the GPU check and the tests all call it, so "relative
// error 1e-3" means the same thing in every report.
#pragma once

#include <span>

#include "verify/host_tensor.h"

namespace mugraph::verify {

// max_i |candidate_i - reference_i| / max_i |reference_i|, with two rules where that quotient
// says nothing:
//  - any NaN or infinity, in either tensor, gives +infinity: such a comparison never passes
//    a tolerance;
//  - an all-zero reference is matched only exactly: 0 when the candidate is all zero too,
//    else +infinity (an error relative to nothing is unbounded; falling back to the absolute
//    error would let a tiny but wrong result pass as "relative error 1e-300").
// Empty tensors compare as 0. UserError if the sizes differ.
double normwiseRelativeError(std::span<const double> reference, std::span<const double> candidate);

// normwiseRelativeError of each output, max over outputs (matched by name; UserError if names,
// shapes or value counts differ).
double maxRelativeError(const TensorMap<double>& reference, const TensorMap<double>& candidate);

}  // namespace mugraph::verify
