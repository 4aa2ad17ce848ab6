// Fresh random inputs for a program, reproducible from a seed.
#pragma once

#include <cstdint>

#include "graph/ir.h"
#include "verify/host_tensor.h"

namespace mugraph::verify {

// Uniform in [-scale, scale] for every input of `program`, drawn from `seed`.
TensorMap<double> randomInputs(const graph::Program& program, uint64_t seed, double scale = 1.0);

// Normal with mean 0 and standard deviation `stddev` for every input, drawn from `seed`.
TensorMap<double> normalInputs(const graph::Program& program, uint64_t seed, double stddev);

// For attention programs: the standard deviation of normal inputs at which the logits (the
// first matmul feeding exp or reduce_max, times the scale applied to it, through a causal
// mask, an added bias and a tanh soft cap) have standard
// deviation `logitStd`: for q, k ~ N(0, σ²) summed over d terms and scaled by c, the logits'
// deviation is c·σ²·√d. Real models reach 16 (QK-norm models, long contexts, attention
// sinks). UserError for a program without such a matmul.
double inputStdForLogitStd(const graph::Program& program, double logitStd);

}  // namespace mugraph::verify
