// causal_mask (graph/ops.h): the elements above the bottom-right-aligned diagonal become -inf,
// per sequence of `queries` rows. The interpreter against a hand computation, causal attention
// against a hand-written masked softmax at a real logit spread, a one-pass schedule with the
// mask on each key tile (the tiles above the diagonal all -inf) verified at the finite-field
// level, the mistakes a schedule makes in the mask rejected, and the program text round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "graph/program_text.h"
#include "tests/verify/causal_attention.h"
#include "verify/equivalence.h"
#include "verify/interpreter.h"
#include "verify/random_inputs.h"
#include "verify/test_support.h"

namespace mugraph::verify {
namespace {

graph::Program parse(const std::string& text) {
  return graph::parseProgramText("program p\n" + text, "p.mg");
}

TEST(CausalMask, InterpreterKeepsTheLowerTriangleAlignedToTheLastKey) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  // 4 queries over 6 keys (a block of queries at the end of a longer cache), and 6 rows holding
  // two sequences of 3 queries over 5 keys (query heads folded into the rows).
  for (const auto& [rows, cols, queries] :
       {std::tuple<int64_t, int64_t, int64_t>{4, 6, 0}, {6, 5, 3}, {5, 5, 0}}) {
    const std::string shape = "[2, " + std::to_string(rows) + ", " + std::to_string(cols) + "]";
    const std::string attr = queries > 0 ? ", queries=" + std::to_string(queries) : "";
    const graph::Program program =
        parse("input X f32 " + shape + "\nY = causal_mask(X" + attr + ")\noutput Y\n");
    const TensorMap<double> inputs = normalInputs(program, seed, 1.0);
    const HostTensor<double>& x = inputs.at("X");
    const HostTensor<double> y = evaluate(program, inputs).at("Y");
    const int64_t q = queries > 0 ? queries : rows;
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const size_t at = static_cast<size_t>((b * rows + r) * cols + c);
          const bool kept = c - (cols - q) <= r % q;
          SCOPED_TRACE(shape + attr + " at " + std::to_string(r) + ", " + std::to_string(c));
          if (kept) {
            EXPECT_EQ(y.data[at], x.data[at]);
          } else {
            EXPECT_EQ(y.data[at], -std::numeric_limits<double>::infinity());
          }
        }
      }
    }
  }
}

TEST(CausalMask, CausalAttentionMatchesAHandWrittenMaskedSoftmaxAtLogitSpread16) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const int64_t batch = 2, rows = 8, dim = 16, seq = 12;
  const graph::Program program = testing::causalAttentionProgram(batch, rows, dim, seq);
  const TensorMap<double> inputs = testing::attentionInputs(program, 16.0, seed);
  const HostTensor<double> out = evaluate(program, inputs).at("O");
  const HostTensor<double>& q = inputs.at("Q");
  const HostTensor<double>& k = inputs.at("K");
  const HostTensor<double>& v = inputs.at("V");
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t last = r + (seq - rows);  // the last key row r sees
      std::vector<double> s(static_cast<size_t>(last + 1));
      double max = -INFINITY;
      for (int64_t c = 0; c <= last; ++c) {
        double dot = 0;
        for (int64_t d = 0; d < dim; ++d) {
          dot += q.data[static_cast<size_t>((b * rows + r) * dim + d)] *
                 k.data[static_cast<size_t>((b * dim + d) * seq + c)];
        }
        s[static_cast<size_t>(c)] = dot;
        max = std::max(max, dot);
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - max));
      for (int64_t d = 0; d < dim; ++d) {
        double expected = 0;
        for (int64_t c = 0; c <= last; ++c) {
          expected +=
              s[static_cast<size_t>(c)] * v.data[static_cast<size_t>((b * seq + c) * dim + d)];
        }
        expected /= sum;
        EXPECT_NEAR(out.data[static_cast<size_t>((b * rows + r) * dim + d)], expected, 1e-12)
            << "row " << r << " dim " << d;
      }
    }
  }
}

EquivalenceReport check(const graph::KernelGraph& a, const graph::KernelGraph& b, uint64_t seed,
                        bool fingerprintsOnly) {
  EquivalenceOptions options;
  options.seed = seed;
  if (fingerprintsOnly) {
    options.floatScales.clear();
    options.trials = 1;
  }
  return checkEquivalence(a, b, options);
}

// Keys in 4 tiles: query part 0 needs only the first tiles, the rest are all -inf for it; a
// partial last tile (50 keys in tiles of 13) and query parts of 10 rows that are no multiple of
// the tile; and query heads folded into the rows (two sequences of 16).
TEST(CausalMask, OnePassScheduleWithTheMaskPerTileVerifiesAtTheFieldLevel) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  for (const auto& [rows, seq, queries, forloop, parts] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{32, 32, 0, 4, 2},
        {20, 50, 0, 4, 2},
        {32, 24, 16, 3, 4}}) {
    SCOPED_TRACE("rows " + std::to_string(rows) + " keys " + std::to_string(seq));
    const graph::Program program = testing::causalAttentionProgram(2, rows, 8, seq, queries);
    const graph::KernelGraph schedule =
        testing::causalOnlineSchedule(program, forloop, parts, queries);
    const EquivalenceReport report = check(program, schedule, seed, false);
    EXPECT_TRUE(report.equivalent) << report.mismatch;
    EXPECT_EQ(report.level, VerificationLevel::FiniteField) << report.levelReason;
  }
}

TEST(CausalMask, AMissingOrMisalignedMaskIsRejectedByFingerprintsAlone) {
  const uint64_t seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(seed));
  const graph::Program program = testing::causalAttentionProgram(2, 32, 8, 32);
  for (const testing::MaskMistake mistake :
       {testing::MaskMistake::NoMask, testing::MaskMistake::WrongQueries}) {
    const graph::KernelGraph wrong = testing::causalOnlineSchedule(program, 4, 2, 0, mistake);
    EXPECT_FALSE(check(program, wrong, seed, false).equivalent);
    const EquivalenceReport field = check(program, wrong, seed, true);
    EXPECT_EQ(field.level, VerificationLevel::FiniteField) << field.levelReason;
    EXPECT_FALSE(field.equivalent) << "fingerprints alone accepted it";
  }
}

// Inputs drawn for a logit spread (replay --logit-std): the mask between the scale and the
// softmax changes no kept logit, so the spread is the unmasked program's.
TEST(CausalMask, InputsForALogitSpreadSeeThroughTheMask) {
  const graph::Program masked = parse(
      "input Q f16 [2, 64, 32]\ninput K f16 [2, 32, 64]\n"
      "A = causal_mask(scale(matmul(Q, K), c=0.25))\nM = reduce_max(A, dim=2)\n"
      "E = exp(sub(A, M))\noutput E\n");
  const graph::Program plain = parse(
      "input Q f16 [2, 64, 32]\ninput K f16 [2, 32, 64]\n"
      "A = scale(matmul(Q, K), c=0.25)\nM = reduce_max(A, dim=2)\n"
      "E = exp(sub(A, M))\noutput E\n");
  EXPECT_EQ(inputStdForLogitStd(masked, 16.0), inputStdForLogitStd(plain, 16.0));
}

TEST(CausalMask, ProgramTextRoundTripsAndBadQueriesAreRefused) {
  const graph::Program program =
      parse("input X f16 [2, 16, 64]\nY = causal_mask(X, queries=8)\noutput Y\n");
  const std::string text = graph::programToText(program);
  EXPECT_NE(text.find("causal_mask(X, queries=8)"), std::string::npos) << text;
  EXPECT_EQ(graph::programToText(graph::parseProgramText(text, "again.mg")), text);
  EXPECT_ANY_THROW(parse("input X f16 [2, 16, 64]\nY = causal_mask(X, queries=0)\noutput Y\n"));
  EXPECT_ANY_THROW(parse("input X f16 [64]\nY = causal_mask(X)\noutput Y\n"));
  EXPECT_ANY_THROW(parse("input X f16 [2, 16, 64]\nY = causal_mask(X, dim=1)\noutput Y\n"));
  // 16 rows are no whole number of sequences of 5 queries, and 32 queries cannot all see
  // their keys among 16: errors naming the line, not a wrong mask.
  EXPECT_ANY_THROW(parse("input X f32 [1, 16, 64]\nY = causal_mask(X, queries=5)\noutput Y\n"));
  EXPECT_ANY_THROW(parse("input X f32 [1, 32, 16]\nY = causal_mask(X)\noutput Y\n"));
}

}  // namespace
}  // namespace mugraph::verify
