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
#include "verify/range_check.h"

namespace mugraph::search {
namespace {

// A decoder layer's tail at small dims (hidden 64, intermediate 128, vocab 96, 8 rows):
// o_proj, residual, RMSNorm, gated MLP, residual, RMSNorm, lm_head. 23 ops, more than any
// candidate covers with block graphs of 8 ops (smallerBlocks; the default's 12 cover it in
// two block graphs).
graph::Program decoderTail(const std::string& rows = "8", const std::string& dims = "") {
  const std::string norm =
      "sqrt(add_scalar(scale(reduce_sum(square(H), dim=1), c=0.015625), c=1e-06))";
  std::string norm2 = norm;
  norm2.replace(norm2.find("(H)"), 3, "(H2)");
  return graph::parseProgramText("program decoder_tail\n" + dims + "input X f16 [" + rows +
                                     ", 64]\n" + "input Attn f16 [" + rows + ", 64]\n" +
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

// The limits under which the tail needs pieces.
void smallerBlocks(SearchConfig& config) {
  config.maxBlockOps = 8;
}

TEST(SplitProgram, PiecesCoverEveryOpOnceAndAreValidPrograms) {
  const graph::Program program = decoderTail();
  SearchConfig config = defaultConfig(classifyProgram(program));
  smallerBlocks(config);
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
  SearchConfig config = defaultConfig(classifyProgram(program));
  smallerBlocks(config);
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

// GPT-2's layer after attention: o_proj with its bias and residual, LayerNorm, the MLP (bias
// and GELU's tanh form after fc, bias and residual after proj). A matmul and the element-wise
// ops reading its result are one kernel (its epilogue), and no cut falls between them; an
// element-wise op that does not read the matmul's result starts a run of its own.
TEST(SplitProgram, NoCutFallsBetweenAMatmulAndItsEpilogue) {
  const std::string layerNorm =
      "t3 = reduce_sum(h, dim=1)\n"
      "t4 = scale(t3, c=0.015625)\n"
      "t5 = sub(h, t4)\n"
      "t6 = square(t5)\n"
      "t7 = reduce_sum(t6, dim=1)\n"
      "t8 = scale(t7, c=0.015625)\n"
      "t9 = add_scalar(t8, c=1e-05)\n"
      "t10 = sqrt(t9)\n"
      "t11 = div(t5, t10)\n"
      "t12 = mul(t11, g)\n"
      "n = add(t12, beta)\n";
  const graph::Program program = graph::parseProgramText(
      "program gpt2_mlp\n"
      "input a f16 [128, 64]\n"
      "input wo f16 [64, 64]\n"
      "input bo f16 [1, 64]\n"
      "input x f16 [128, 64]\n"
      "input g f16 [1, 64]\n"
      "input beta f16 [1, 64]\n"
      "input wf f16 [64, 256]\n"
      "input bf f16 [1, 256]\n"
      "input wp f16 [256, 64]\n"
      "input bp f16 [1, 64]\n"
      "t0 = matmul(a, wo)\n"
      "t1 = add(t0, bo)\n"
      "h = add(t1, x)\n" +
          layerNorm +
          "f0 = matmul(n, wf)\n"
          "f1 = add(f0, bf)\n"
          "f2 = scale(f1, c=0.5)\n"
          "f3 = square(f1)\n"
          "f4 = mul(f1, f3)\n"
          "f5 = scale(f4, c=0.044715)\n"
          "f6 = add(f1, f5)\n"
          "f7 = scale(f6, c=0.7978845608028654)\n"
          "f8 = tanh(f7)\n"
          "f9 = add_scalar(f8, c=1)\n"
          "f = mul(f2, f9)\n"
          "p0 = matmul(f, wp)\n"
          "p1 = add(p0, bp)\n"
          "y = add(h, p1)\n"
          "output y\n",
      "gpt2_mlp.mg");
  // o_proj and its two adds; the norm (one run); fc and its ten; proj and its two.
  const MatmulsAlone whole =
      kernelsWithMatmulsAlone(program, 0, static_cast<int>(program.ops.size()), /*fusedOps=*/12);
  EXPECT_EQ(whole.kernels, 4);
  EXPECT_EQ(whole.fusedRuns, 4);
  const PieceLimits limits{static_cast<int>(program.ops.size()) - 1, 4, 2, 12};
  const std::vector<ProgramPiece> pieces = splitProgram(program, limits);
  ASSERT_GT(pieces.size(), 1u);
  for (const ProgramPiece& piece : pieces) {
    EXPECT_NE(program.ops[piece.firstOp].kind, graph::OpKind::Add) << piece.program.name;
    EXPECT_NE(program.ops[piece.firstOp].kind, graph::OpKind::Scale) << piece.program.name;
  }
  // The recomputed norm's first op after a matmul reads no matmul: a new run, not an epilogue.
  const graph::Program unrelated = graph::parseProgramText(
      "program unrelated\n"
      "input a f16 [64, 64]\n"
      "input w f16 [64, 64]\n"
      "input x f16 [64, 64]\n"
      "p = matmul(a, w)\n"
      "s = square(x)\n"
      "y = add(p, s)\n"
      "output y\n",
      "unrelated.mg");
  const MatmulsAlone apart = kernelsWithMatmulsAlone(unrelated, 0, 3, 12);
  EXPECT_EQ(apart.kernels, 2);
  EXPECT_EQ(apart.fusedRuns, 1);
}

TEST(SplitProgram, TheDecoderTailGetsAJoinedVariantThatVerifies) {
  const graph::Program program = decoderTail();
  SearchOptions options = testing::quietOptions(program);
  options.config.maxVariants = 2;
  smallerBlocks(options.config);
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

// The decoder tail as written (no recomputed prologues), searched for `maxVariants`.
SearchResult searchedTail(const graph::Program& program, int maxVariants) {
  SearchOptions options = testing::quietOptions(program);
  options.config.maxVariants = maxVariants;
  options.config.recomputePrologues = false;
  smallerBlocks(options.config);
  return superoptimize(program, options);
}

// A dynamic program is searched in pieces too: each piece keeps its variants that are
// equivalent at every length of its range, and the join is checked over the range.
TEST(SplitProgram, ADynamicTailGetsAJoinedVariantEquivalentOverItsRange) {
  const graph::Program program = decoderTail("n", "dim n in [1, 64]\n");
  ASSERT_FALSE(program.dims.empty());
  const SearchResult result = searchedTail(program, 1);
  ASSERT_EQ(result.variants.size(), 1u);
  const VerifiedVariant& v = result.variants.front();
  EXPECT_GT(v.joinedFromPieces, 1);
  EXPECT_EQ(v.schedule.graph.dims, program.dims);
  verify::EquivalenceOptions check;
  check.seed = 13;
  EXPECT_TRUE(verify::checkOverRange(v.schedule, check).equivalent);
}

// A dynamic program's further joins take alternatives its pieces verified; the driver checks each
// over the range (here: checked directly).
TEST(SplitProgram, ADynamicTailsFurtherJoinsAreEquivalentOverItsRange) {
  const graph::Program program = decoderTail("n", "dim n in [1, 64]\n");
  const SearchResult result = searchedTail(program, 3);
  ASSERT_GT(result.variants.size(), 1u);
  for (const VerifiedVariant& v : result.variants) {
    EXPECT_EQ(v.joinedFromPieces, result.summary.pieces);
    EXPECT_EQ(v.schedule.graph.dims, program.dims);
    verify::EquivalenceOptions check;
    check.seed = 19;
    EXPECT_TRUE(verify::checkOverRange(v.schedule, check).equivalent) << v.name;
  }
}

TEST(SplitProgram, WithOneVariantAskedTheTailGetsOneJoin) {
  const SearchResult result = searchedTail(decoderTail(), 1);
  ASSERT_EQ(result.variants.size(), 1u);
  EXPECT_EQ(result.variants.front().joinedFromPieces, result.summary.pieces);
}

// Further joins swap one piece's best for an alternative, verified by composition: each is a
// different schedule of the whole program, estimated no cheaper than the join of the bests,
// and (checked here against the whole program, as the search does not) equivalent to it.
TEST(SplitProgram, TheTailsFurtherJoinsSwapOnePieceAndAreEquivalent) {
  const graph::Program program = decoderTail();
  const SearchResult result = searchedTail(program, 4);
  ASSERT_GT(result.variants.size(), 1u);
  ASSERT_LE(result.variants.size(), 4u);
  const VerifiedVariant& bests = result.variants.front();
  EXPECT_EQ(bests.verification.detail.find("by composition"), std::string::npos);
  std::set<uint64_t> hashes;
  for (const VerifiedVariant& v : result.variants) {
    EXPECT_TRUE(hashes.insert(v.hash).second) << v.name;
    EXPECT_EQ(v.joinedFromPieces, result.summary.pieces);
    EXPECT_GE(v.cost.microseconds, bests.cost.microseconds);
    EXPECT_NO_THROW(graph::validateSchedule(v.schedule));
    if (&v == &bests) continue;
    EXPECT_EQ(v.verification.detail.rfind("by composition", 0), 0u) << v.verification.detail;
    EXPECT_GE(v.verification.falseAcceptBound, bests.verification.falseAcceptBound);
    EXPECT_LE(v.verification.falseAcceptBound, 1e-12);
    verify::EquivalenceOptions check;
    check.seed = 17;
    EXPECT_TRUE(verify::checkEquivalence(program, v.schedule.graph, check).equivalent) << v.name;
  }
}

}  // namespace
}  // namespace mugraph::search
