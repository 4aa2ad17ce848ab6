// Fresh random inputs for a program, reproducible from a seed.
#pragma once

#include <cstdint>

#include "graph/ir.h"
#include "verify/host_tensor.h"

namespace mugraph::verify {

// Uniform in [-scale, scale] for every input of `program`, drawn from `seed`.
TensorMap<double> randomInputs(const graph::Program& program, uint64_t seed, double scale = 1.0);

}  // namespace mugraph::verify
