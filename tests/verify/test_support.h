// Helpers shared by the interpreter tests: fresh seeds (printed through SCOPED_TRACE so a
// failure can be replayed), one-op programs, a normwise comparison of flat value arrays with
// the tolerance of results computed in doubles, and the options of a check that fingerprints
// alone decide.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/program_text.h"
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

// An axis map entry (imap, omap) of a grid axis that replicates the tensor.
inline constexpr int kNone = graph::kReplicated;

// The attributes of an op along `dim`; `to` is reduce_sum's size of the reduced dim.
inline graph::OpAttrs dimAttrs(int dim, int64_t to = 1) {
  graph::OpAttrs attrs;
  attrs.dim = dim;
  attrs.to = to;
  return attrs;
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

// The normwise error allowed between two computations in doubles of the same values.
inline constexpr double kTolerance = 1e-12;

// verify::normwiseRelativeError of flat value arrays; sizes must match.
inline double normwiseError(const std::vector<double>& got, const std::vector<double>& expected) {
  EXPECT_EQ(got.size(), expected.size());
  if (got.size() != expected.size()) return std::numeric_limits<double>::infinity();
  return normwiseRelativeError(expected, got);
}

// The program of the input lines `inputs` and the statements `body`, whose output is Y.
inline graph::Program parseYProgram(const std::string& inputs, const std::string& body) {
  return graph::parseProgramText("program p\n" + inputs + body + "output Y\n", "p.mg");
}

// checkEquivalence of `a` and `b` with `seed`, float tests at scale 0.5 or, where
// `fingerprintsAlone`, one trial without float tests.
inline EquivalenceReport checkAtHalfScale(const graph::Program& a, const graph::Program& b,
                                          uint64_t seed, bool fingerprintsAlone) {
  EquivalenceOptions options;
  options.seed = seed;
  options.floatScales = {0.5};
  if (fingerprintsAlone) {
    options.floatScales.clear();
    options.trials = 1;
  }
  return checkEquivalence(a, b, options);
}

// A check with no float test: fingerprints alone must decide.
inline EquivalenceOptions fingerprintsOnly(uint64_t seed) {
  EquivalenceOptions options;
  options.seed = seed;
  options.floatScales = {};
  return options;
}

}  // namespace mugraph::verify::testing
