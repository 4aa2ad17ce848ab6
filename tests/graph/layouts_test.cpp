// Layouts: storageStrides is the one definition of where each logical element of an input
// lies. transposed swaps the last two dims in storage; heads_transposed the two before them,
// so a projection's result [s, h·d] is read per head as [h, s, d] without a copy.
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "graph/error.h"
#include "graph/hash.h"
#include "graph/json_format.h"
#include "graph/program_text.h"
#include "graph/types.h"
#include "graph/validate.h"

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

// An output may be stored heads_transposed ([h, s, d] laid out [s, h, d]: attention's result
// read as [s, h·d] with no copy). Text and JSON carry it, the hash tells it apart, and only a
// computed output of rank 3 or more may have it.
TEST(Layouts, AnOutputStoredHeadsTransposedRoundTripsAndIsItsOwnProgram) {
  const std::string text =
      "program p\ninput X f16 [4, 16, 32]\nY = exp(X)\nZ = sigmoid(Y)\n"
      "output Y layout=heads_transposed\noutput Z\n";
  const Program program = parseProgramText(text, "p.mg");
  EXPECT_EQ(program.tensors[program.outputs[0]].layout, Layout::HeadsTransposed);
  EXPECT_EQ(program.tensors[program.outputs[1]].layout, Layout::RowMajor);
  EXPECT_EQ(programToText(program), text);
  const Program fromJson = programFromJson(programToJson(program), "p.json", "$");
  EXPECT_EQ(fromJson, program);
  EXPECT_EQ(programToJson(program)["outputs"][0]["layout"], "heads_transposed");
  EXPECT_EQ(programToJson(program)["outputs"][1], "Z");
  const Program rowMajor = parseProgramText(
      "program p\ninput X f16 [4, 16, 32]\nY = exp(X)\nZ = sigmoid(Y)\noutput Y\noutput Z\n",
      "q.mg");
  EXPECT_NE(programHash(program), programHash(rowMajor));
}

TEST(Layouts, OnlyAComputedOutputOfRankThreeMayBeStoredHeadsTransposed) {
  const auto refused = [](const std::string& text) {
    try {
      parseProgramText(text, "bad.mg");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refused("input X f16 [16, 32]\nY = exp(X)\noutput Y layout=heads_transposed\n")
                .find("rank 2"),
            std::string::npos);
  EXPECT_NE(refused("input X f16 [4, 16, 32]\nY = exp(X)\noutput Y layout=transposed\n")
                .find("row_major or heads_transposed"),
            std::string::npos);
  EXPECT_NE(refused("input X f16 [4, 16, 32]\nY = exp(X)\noutput X layout=heads_transposed\n")
                .find("input 'X'"),
            std::string::npos);
  // An intermediate tensor is row-major, whatever its rank.
  GraphBuilder builder("p");
  const TensorId x = builder.input("X", DType::F16, {4, 16, 32});
  const TensorId y = builder.op(OpKind::Exp, {x}, {}, "Y");
  builder.output(builder.op(OpKind::Sigmoid, {y}, {}, "Z"));
  Program program = builder.graph();
  program.tensors[y].layout = Layout::HeadsTransposed;
  EXPECT_THROW(validateProgram(program), IrError);
  program.tensors[y].layout = Layout::RowMajor;
  program.tensors[program.outputs[0]].layout = Layout::HeadsTransposed;
  EXPECT_NO_THROW(validateProgram(program));
}

TEST(Layouts, AScheduleStoresEachOutputAsItsProgramDoes) {
  const Program program = parseProgramText(
      "input X f16 [4, 16, 32]\nY = exp(X)\noutput Y layout=heads_transposed\n", "p.mg");
  Schedule schedule{"s", program, program};
  EXPECT_NO_THROW(validateSchedule(schedule));
  schedule.graph.tensors[schedule.graph.outputs[0]].layout = Layout::RowMajor;
  EXPECT_THROW(validateSchedule(schedule), IrError);
}

}  // namespace
}  // namespace mugraph::graph
