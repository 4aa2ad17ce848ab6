// The facts graph/value_ranges.h states about a program's values: which are nonnegative, and
// which can be as large as the square of the program's values.
#include "graph/value_ranges.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "graph/program_text.h"

namespace mugraph::graph {
namespace {

// Every tensor's flag, by name.
std::map<std::string, bool> byName(const KernelGraph& program, const std::vector<bool>& flags) {
  std::map<std::string, bool> named;
  for (size_t t = 0; t < program.tensors.size(); ++t) named[program.tensors[t].name] = flags[t];
  return named;
}

// A decoder layer's end: residual, RMSNorm with epsilon, a projection, a softmax-like exp.
const Program& decoderTail() {
  static const Program program = parseProgramText(R"(program tail
input X f16 [4, 256]
input R f16 [4, 256]
input W f16 [256, 64]
input G f16 [1, 256]
H = add(R, X)
Q = square(H)
S = reduce_sum(Q, dim=1)
M = scale(S, c=0.00390625)
E = add_scalar(M, c=1e-06)
D = sqrt(E)
N = div(H, D)
V = div(Q, G)
C = sub(M, Q)
P = matmul(mul(N, G), W)
Z = exp(P)
output P
output V
output C
output Z
)",
                                                  "tail.mg");
  return program;
}

TEST(ValueRanges, SquaresAndWhatSumsOrScalesThemHaveSquaredRange) {
  const Program& program = decoderTail();
  std::map<std::string, bool> squared = byName(program, squaredRangeTensors(program));
  for (const char* name : {"Q", "S", "M", "E", "V", "C"}) EXPECT_TRUE(squared.at(name)) << name;
  // A root, a quotient by the root, what is computed from those, and an exp are back in range.
  for (const char* name : {"X", "H", "D", "N", "P", "Z"}) EXPECT_FALSE(squared.at(name)) << name;
}

TEST(ValueRanges, NonnegativeValuesFollowTheOps) {
  const Program& program = decoderTail();
  std::map<std::string, bool> nonnegative = byName(program, nonnegativeTensors(program));
  for (const char* name : {"Q", "S", "M", "E", "D", "Z"}) EXPECT_TRUE(nonnegative.at(name)) << name;
  // A difference, and anything read from an input of either sign, may be negative.
  for (const char* name : {"X", "H", "N", "C", "P", "V"}) EXPECT_FALSE(nonnegative.at(name)) << name;
}

}  // namespace
}  // namespace mugraph::graph
