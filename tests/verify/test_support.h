// Helpers shared by the interpreter tests: fresh seeds (printed through SCOPED_TRACE so a
// failure can be replayed), one-op programs, a normwise comparison of flat value arrays and
// the options of a check that fingerprints alone decide.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "verify/equivalence.h"
#include "verify/host_tensor.h"
#include "verify/relative_error.h"

namespace mugraph::verify::testing {

inline uint64_t freshSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) | device();
}

inline std::string seedTrace(uint64_t seed) {
  return "random seed " + std::to_string(seed);
}

// A program with inputs "a" (and "b") of the given shapes and one op whose result is "out".
inline graph::Program oneOpProgram(graph::OpKind kind, const std::vector<graph::Dims>& shapes,
                                   graph::OpAttrs attrs = {}) {
  graph::GraphBuilder builder("one_op");
  std::vector<graph::TensorId> operands;
  for (size_t i = 0; i < shapes.size(); ++i) {
    operands.push_back(
        builder.input(std::string(1, static_cast<char>('a' + i)), graph::DType::F32, shapes[i]));
  }
  builder.output(builder.op(kind, operands, attrs, "out"));
  return builder.finish();
}

// verify::normwiseRelativeError of flat value arrays; sizes must match.
inline double normwiseError(const std::vector<double>& got, const std::vector<double>& expected) {
  EXPECT_EQ(got.size(), expected.size());
  if (got.size() != expected.size()) return std::numeric_limits<double>::infinity();
  return normwiseRelativeError(expected, got);
}

// A check with no float test: fingerprints alone must decide.
inline EquivalenceOptions fingerprintsOnly(uint64_t seed) {
  EquivalenceOptions options;
  options.seed = seed;
  options.floatScales = {};
  return options;
}

}  // namespace mugraph::verify::testing
