// Which default search space a program gets (search_config.h: classifyProgram).
#include <gtest/gtest.h>

#include "graph/program_text.h"
#include "search/search_config.h"

namespace mugraph::search {
namespace {

ProgramKind kindOf(const std::string& body) {
  return classifyProgram(graph::parseProgramText("program p\n" + body, "program_kind_test"));
}

TEST(ProgramKind, AttentionIsAMatmulFedByExpThroughOtherOps) {
  EXPECT_EQ(kindOf("input Q f16 [64, 64]\ninput K f16 [64, 128]\ninput V f16 [128, 64]\n"
                   "S = matmul(Q, K)\nM = reduce_max(S, dim=1)\nX = sub(S, M)\nE = exp(X)\n"
                   "L = reduce_sum(E, dim=1)\nP = div(E, L)\nO = matmul(P, V)\noutput O\n"),
            ProgramKind::Attention);
}

TEST(ProgramKind, AnExpNoMatmulReadsIsNotAttention) {
  // A GEMM with an exp epilogue, and a projection followed by a softmax no matmul reads.
  EXPECT_EQ(kindOf("input A f16 [64, 128]\ninput B f16 [128, 64]\nC = matmul(A, B)\n"
                   "D = exp(C)\noutput D\n"),
            ProgramKind::Other);
  EXPECT_EQ(kindOf("input A f16 [64, 128]\ninput B f16 [128, 64]\nC = matmul(A, B)\n"
                   "E = exp(C)\nL = reduce_sum(E, dim=1)\nP = div(E, L)\noutput P\n"),
            ProgramKind::Other);
}

TEST(ProgramKind, NormsAndGemms) {
  EXPECT_EQ(kindOf("input A f16 [64, 128]\ninput B f16 [128, 64]\nC = matmul(A, B)\noutput C\n"),
            ProgramKind::Gemm);
  EXPECT_EQ(kindOf("input X f16 [8, 128]\ninput W f16 [128, 64]\nN = rms_norm(X, dim=1)\n"
                   "C = matmul(N, W)\noutput C\n"),
            ProgramKind::NormMatmul);
}

}  // namespace
}  // namespace mugraph::search
