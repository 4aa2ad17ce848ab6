// Programs larger than one search covers: split into pieces (every op in exactly one, each a
// valid program) and searched piece by piece, the pieces' best variants joined into one
// schedule of the whole program that verifies against it.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "graph/program_text.h"
#include "graph/validate.h"
#include "search/split_program.h"
#include "search/superoptimize.h"
#include "search_support.h"
#include "verify/equivalence.h"

namespace mugraph::search {
namespace {

// A decoder layer's tail at small dims (hidden 64, intermediate 128, vocab 96, 8 rows):
// o_proj, residual, RMSNorm, gated MLP, residual, RMSNorm, lm_head. 23 ops, more than any
// candidate of the default limits covers.
graph::Program decoderTail() {
  const std::string norm =
      "sqrt(add_scalar(scale(reduce_sum(square(H), dim=1), c=0.015625), c=1e-06))";
  std::string norm2 = norm;
  norm2.replace(norm2.find("(H)"), 3, "(H2)");
  return graph::parseProgramText(
      "program decoder_tail\n"
      "input X f16 [8, 64]\n"
      "input Attn f16 [8, 64]\n"
      "input Wo f16 [64, 64]\n"
      "input Wn f16 [1, 64]\n"
      "input Wg f16 [64, 128]\n"
      "input Wu f16 [64, 128]\n"
      "input Wd f16 [128, 64]\n"
      "input Wn2 f16 [1, 64]\n"
      "input Wlm f16 [64, 96]\n"
      "H = add(X, matmul(Attn, Wo))\n"
      "N = mul(div(H, " +
          norm +
          "), Wn)\n"
          "M = mul(silu(matmul(N, Wg)), matmul(N, Wu))\n"
          "H2 = add(H, matmul(M, Wd))\n"
          "N2 = mul(div(H2, " +
          norm2 +
          "), Wn2)\n"
          "L = matmul(N2, Wlm)\n"
          "output H2\n"
          "output L\n",
      "decoder_tail.mg");
}

TEST(SplitProgram, PiecesCoverEveryOpOnceAndAreValidPrograms) {
  const graph::Program program = decoderTail();
  const SearchConfig config = defaultConfig(classifyProgram(program));
  ASSERT_GT(static_cast<int>(program.ops.size()), maxOpsOneSearch(config));
  const std::vector<ProgramPiece> pieces =
      splitProgram(program, maxOpsPerPiece(config, static_cast<int>(program.ops.size())));
  ASSERT_GT(pieces.size(), 1u);
  int next = 0;
  std::set<std::string> available;
  for (graph::TensorId t : program.inputs) available.insert(program.tensors[t].name);
  for (const ProgramPiece& piece : pieces) {
    EXPECT_EQ(piece.firstOp, next);
    EXPECT_GT(piece.endOp, piece.firstOp);
    EXPECT_LE(piece.endOp - piece.firstOp,
              maxOpsPerPiece(config, static_cast<int>(program.ops.size())));
    EXPECT_EQ(static_cast<int>(piece.program.ops.size()), piece.endOp - piece.firstOp);
    EXPECT_NO_THROW(graph::validateProgram(piece.program));
    // Each piece reads only original inputs and what earlier pieces return.
    for (graph::TensorId t : piece.program.inputs) {
      EXPECT_TRUE(available.count(piece.program.tensors[t].name)) << piece.program.tensors[t].name;
    }
    for (graph::TensorId t : piece.program.outputs) available.insert(piece.program.tensors[t].name);
    next = piece.endOp;
  }
  EXPECT_EQ(next, static_cast<int>(program.ops.size()));
  for (graph::TensorId t : program.outputs) EXPECT_TRUE(available.count(program.tensors[t].name));
}

TEST(SplitProgram, PrefersCutsCrossedByFewTensors) {
  // After B only B crosses; after C both B and C do.
  const graph::Program program = graph::parseProgramText(
      "program chain\n"
      "input A f16 [8, 64]\n"
      "B = exp(A)\n"
      "C = square(B)\n"
      "D = add(B, C)\n"
      "E = exp(D)\n"
      "output E\n",
      "chain.mg");
  const std::vector<ProgramPiece> pieces = splitProgram(program, 2);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].endOp, 1);
}

// Pieces cut up front leave room for every matmul as a kernel of its own (its tiled GEMM) and
// keep the runs between matmuls whole where they can: the residual add and the RMSNorm after
// it land in one piece.
TEST(SplitProgram, PiecesLeaveRoomForEveryMatmulAlone) {
  const graph::Program program = decoderTail();
  const SearchConfig config = defaultConfig(classifyProgram(program));
  const int n = static_cast<int>(program.ops.size());
  EXPECT_FALSE(roomForMatmulsAlone(program, config));
  const PieceLimits limits = pieceLimits(config, n);
  const std::vector<ProgramPiece> pieces = splitProgram(program, limits);
  ASSERT_GT(pieces.size(), 1u);
  for (const ProgramPiece& piece : pieces) {
    const MatmulsAlone needed =
        kernelsWithMatmulsAlone(program, piece.firstOp, piece.endOp, limits.fusedOps);
    EXPECT_LE(needed.kernels, config.maxKernels) << piece.program.name;
    EXPECT_LE(needed.fusedRuns, config.maxBlockGraphKernels) << piece.program.name;
    EXPECT_TRUE(roomForMatmulsAlone(piece.program, config)) << piece.program.name;
    // No piece starts between the residual add (the op after the first matmul) and the norm.
    EXPECT_NE(piece.firstOp, 2) << piece.program.name;
  }
}

TEST(SplitProgram, TheDecoderTailGetsAJoinedVariantThatVerifies) {
  const graph::Program program = decoderTail();
  SearchOptions options = testing::quietOptions(program);
  options.config.maxVariants = 2;
  const SearchResult result = superoptimize(program, options);
  // One joined variant per form searched: the tail as written, and with the norm before gate
  // and up computed once for each (program_rewrites.h, recomputedPrologues).
  ASSERT_EQ(result.variants.size(), 2u);
  EXPECT_GT(result.summary.pieces, 1);
  for (const VerifiedVariant& v : result.variants) {
    EXPECT_GT(v.joinedFromPieces, 1);
    EXPECT_EQ(v.verification.level, "finite-field");
    EXPECT_LE(v.verification.falseAcceptBound, 1e-12);
    EXPECT_NO_THROW(graph::validateSchedule(v.schedule));
    EXPECT_EQ(v.schedule.program, program);
    verify::EquivalenceOptions check;
    check.seed = 11;
    EXPECT_TRUE(verify::checkEquivalence(program, v.schedule.graph, check).equivalent);
  }
}

TEST(SplitProgram, WithoutRecomputedProloguesTheTailGetsOneJoinedVariant) {
  const graph::Program program = decoderTail();
  SearchOptions options = testing::quietOptions(program);
  options.config.maxVariants = 2;
  options.config.recomputePrologues = false;
  const SearchResult result = superoptimize(program, options);
  ASSERT_EQ(result.variants.size(), 1u);
  EXPECT_EQ(result.variants.front().joinedFromPieces, result.summary.pieces);
}

}  // namespace
}  // namespace mugraph::search
