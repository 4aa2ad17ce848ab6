// Layouts: storageStrides is the one definition of where each logical element of an input
// lies. transposed swaps the last two dims in storage; heads_transposed the two before them,
// so a projection's result [s, h·d] is read per head as [h, s, d] without a copy.
#include <gtest/gtest.h>

#include "graph/program_text.h"
#include "graph/types.h"

namespace mugraph::graph {
namespace {

TEST(Layouts, StridesOfEachLayout) {
  EXPECT_EQ(storageStrides({4, 16, 32}, Layout::RowMajor), (std::vector<int64_t>{512, 32, 1}));
  EXPECT_EQ(storageStrides({4, 16, 32}, Layout::Transposed), (std::vector<int64_t>{512, 1, 16}));
  // [h=4, s=16, d=32] stored as [s, h, d]: a head steps d, a row steps h·d.
  EXPECT_EQ(storageStrides({4, 16, 32}, Layout::HeadsTransposed),
            (std::vector<int64_t>{32, 128, 1}));
  EXPECT_EQ(storageStrides({2, 4, 16, 32}, Layout::HeadsTransposed),
            (std::vector<int64_t>{2048, 32, 128, 1}));
}

TEST(Layouts, StoredShapeOfEachLayout) {
  EXPECT_EQ(storedShape({4, 16, 32}, Layout::RowMajor), (Dims{4, 16, 32}));
  EXPECT_EQ(storedShape({4, 16, 32}, Layout::Transposed), (Dims{4, 32, 16}));
  EXPECT_EQ(storedShape({4, 16, 32}, Layout::HeadsTransposed), (Dims{16, 4, 32}));
  EXPECT_EQ(storedShape({2, 4, 16, 32}, Layout::HeadsTransposed), (Dims{2, 16, 4, 32}));
}

TEST(Layouts, HeadsTransposedEveryElementHasItsOwnPlace) {
  const Dims shape{3, 5, 8};
  const std::vector<int64_t> s = storageStrides(shape, Layout::HeadsTransposed);
  std::vector<int> hits(static_cast<size_t>(elementCount(shape)), 0);
  for (int64_t h = 0; h < 3; ++h) {
    for (int64_t r = 0; r < 5; ++r) {
      for (int64_t d = 0; d < 8; ++d) {
        const int64_t offset = h * s[0] + r * s[1] + d * s[2];
        EXPECT_EQ(offset, (r * 3 + h) * 8 + d);  // row-major over the stored [s, h, d]
        ++hits.at(static_cast<size_t>(offset));
      }
    }
  }
  for (int n : hits) EXPECT_EQ(n, 1);
}

TEST(Layouts, ProgramTextRoundTripsEveryLayoutAndRefusesTooLowARank) {
  const std::string text =
      "program p\ninput Q f16 [4, 16, 32] layout=heads_transposed\n"
      "input K f16 [4, 32, 16] layout=transposed\nS = matmul(Q, K)\noutput S\n";
  const Program program = parseProgramText(text, "p.mg");
  EXPECT_EQ(program.tensors[program.inputs[0]].layout, Layout::HeadsTransposed);
  EXPECT_EQ(programToText(parseProgramText(programToText(program), "again.mg")),
            programToText(program));
  EXPECT_ANY_THROW(parseProgramText(
      "program p\ninput Q f16 [16, 32] layout=heads_transposed\nY = exp(Q)\noutput Y\n", "p.mg"));
}

}  // namespace
}  // namespace mugraph::graph
