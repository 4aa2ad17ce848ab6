// Canonical hashes: independent of statement order, intermediate and tile names and the operand
// order of add/mul; sensitive to every attribute, shape, dtype, layout and scheduling choice.
#include "graph/hash.h"

#include <gtest/gtest.h>

#include "graph/builder.h"
#include "graph/json_format.h"
#include "graph/program_text.h"
#include "malformed_cases.h"

namespace mugraph::graph {
namespace {

using testing::kValidScheduleJson;
using testing::withChange;

const char* const kAttention =
    "input Q f16 [2, 8, 4]\n"
    "input K f16 [2, 4, 16]\n"
    "A = matmul(Q, K)\n"
    "E = exp(A)\n"
    "S = reduce_sum(E, dim=2)\n"
    "M = reduce_max(A, dim=2)\n"
    "O = div(E, S)\n"
    "output O\n"
    "output M\n";

uint64_t hashOf(const std::string& text) {
  return programHash(parseProgramText(text, "h.mg"));
}

uint64_t scheduleHashOf(const std::string& json) {
  return scheduleHash(scheduleFromJson(nlohmann::json::parse(json), "h.json"));
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

TEST(ProgramHash, IgnoresStatementOrderAndIntermediateNames) {
  const std::string reordered =
      "input K f16 [2, 4, 16]\n"
      "input Q f16 [2, 8, 4]\n"
      "scores = matmul(Q, K)\n"
      "M = reduce_max(scores, dim=2)\n"
      "e = exp(scores)\n"
      "total = reduce_sum(e, dim=2)\n"
      "O = div(e, total)\n"
      "output O\n"
      "output M\n";
  EXPECT_EQ(hashOf(reordered), hashOf(kAttention));
  const std::string nested =
      "input Q f16 [2, 8, 4]\n"
      "input K f16 [2, 4, 16]\n"
      "A = matmul(Q, K)\n"
      "E = exp(A)\n"
      "O = div(E, reduce_sum(E, dim=2))\n"
      "M = reduce_max(A, dim=2)\n"
      "output O\n"
      "output M\n";
  EXPECT_EQ(hashOf(nested), hashOf(kAttention));
}

TEST(ProgramHash, CommutativeOperandOrderDoesNotMatterButOtherOrderDoes) {
  const std::string head = "input a f32 [4, 4]\ninput b f32 [4, 4]\n";
  EXPECT_EQ(hashOf(head + "c = add(a, b)\noutput c\n"), hashOf(head + "c = add(b, a)\noutput c\n"));
  EXPECT_EQ(hashOf(head + "c = mul(a, b)\noutput c\n"), hashOf(head + "c = mul(b, a)\noutput c\n"));
  EXPECT_NE(hashOf(head + "c = sub(a, b)\noutput c\n"), hashOf(head + "c = sub(b, a)\noutput c\n"));
  EXPECT_NE(hashOf(head + "c = div(a, b)\noutput c\n"), hashOf(head + "c = div(b, a)\noutput c\n"));
  EXPECT_NE(hashOf(head + "c = matmul(a, b)\noutput c\n"),
            hashOf(head + "c = matmul(b, a)\noutput c\n"));
  EXPECT_NE(hashOf(head + "c = add(a, b)\noutput c\n"), hashOf(head + "c = mul(a, b)\noutput c\n"));
}

TEST(ProgramHash, ChangesWithEveryMeaningfulDetail) {
  const uint64_t base = hashOf(kAttention);
  const std::vector<std::pair<std::string, std::string>> changes = {
      {"dim=2)\nM", "dim=2, to=16)\nM"},  // reduce_sum to=
      {"reduce_max(A, dim=2)", "reduce_max(A, dim=1)"},
      {"[2, 8, 4]", "[2, 16, 4]"},      // an input shape
      {"input Q f16", "input Q bf16"},  // a dtype (K must match: changed below too)
      {"[2, 4, 16]\n", "[2, 4, 16] layout=transposed\n"},
      {"output M\n", ""},                                      // one output fewer
      {"O = div(E, S)\noutput O", "P = div(E, S)\noutput P"},  // an output name
      {"E = exp(A)", "E = square(A)"},
  };
  for (const auto& [from, to] : changes) {
    SCOPED_TRACE(from + " -> " + to);
    std::string changed = withChange(kAttention, from, to);
    if (from == "input Q f16") changed = withChange(changed, "input K f16", "input K bf16");
    EXPECT_NE(hashOf(changed), base);
  }
  const std::string head = "input x f32 [4]\n";
  EXPECT_NE(hashOf(head + "y = scale(x, c=0.5)\noutput y\n"),
            hashOf(head + "y = scale(x, c=0.25)\noutput y\n"));
  EXPECT_NE(hashOf(head + "y = scale(x, c=0.5)\noutput y\n"),
            hashOf("input z f32 [4]\ny = scale(z, c=0.5)\noutput y\n"));
}

TEST(ProgramHash, HexIsSixteenLowercaseDigits) {
  EXPECT_EQ(hashHex(0), "0000000000000000");
  EXPECT_EQ(hashHex(0xABCDEF0123456789ULL), "abcdef0123456789");
}

TEST(ScheduleHash, IgnoresTileNames) {
  std::string renamed = replaceAll(kValidScheduleJson, "\"acc\"", "\"total\"");
  renamed = replaceAll(renamed, "\"q\"", "\"q_tile\"");
  renamed = replaceAll(renamed, "\"a\"", "\"partial\"");
  ASSERT_NE(renamed, kValidScheduleJson);
  EXPECT_EQ(scheduleHashOf(renamed), scheduleHashOf(kValidScheduleJson));
}

TEST(ScheduleHash, ChangesWithEverySchedulingChoice) {
  const uint64_t base = scheduleHashOf(kValidScheduleJson);
  const std::string& s = kValidScheduleJson;
  const std::vector<std::string> variants = {
      withChange(s, "\"threads\": 128", "\"threads\": 256"),
      withChange(s, "\"forloop\": 4", "\"forloop\": 2"),
      withChange(s, "\"threads\": 128", "\"cluster\": {\"x\": 2}, \"threads\": 128"),
      withChange(s, "\"threads\": 128", "\"threads\": 128, \"occupancy\": 2"),
      withChange(s, "\"y\": 2, \"z\": 1", "\"y\": 4, \"z\": 1"),
      // Swap which grid axis splits batch and rows: only imap/omap change.
      withChange(withChange(withChange(s, "{\"x\": 0, \"y\": 1}, \"fmap\"",
                                       "{\"x\": 1, \"y\": 0}, \"fmap\""),
                            "{\"x\": 0, \"y\": -1}", "{\"x\": -1, \"y\": 0}"),
                 "\"omap\": {\"x\": 0, \"y\": 1}", "\"omap\": {\"x\": 1, \"y\": 0}"),
  };
  for (size_t i = 0; i < variants.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_NE(scheduleHashOf(variants[i]), base);
  }
  // Clusters of one block are no clusters: the hash (a found schedule's name) stays.
  EXPECT_EQ(scheduleHashOf(withChange(s, "\"threads\": 128",
                                      "\"cluster\": {\"x\": 1}, \"threads\": 128")),
            base);
  // Nor is an occupancy of one block an occupancy.
  EXPECT_EQ(scheduleHashOf(withChange(s, "\"threads\": 128", "\"threads\": 128, \"occupancy\": 1")),
            base);
}

// Two independent kernels: listing them in either order is the same schedule.
Schedule twoKernelSchedule(bool squareFirst, int threads) {
  GraphBuilder programBuilder("two");
  const TensorId x = programBuilder.input("X", DType::F32, {8, 16});
  programBuilder.output(programBuilder.op(OpKind::Exp, {x}, {}, "Y"));
  programBuilder.output(programBuilder.op(OpKind::Square, {x}, {}, "Z"));
  Schedule schedule;
  schedule.name = "two";
  schedule.program = programBuilder.finish();
  GraphBuilder builder = GraphBuilder::withInputsOf(schedule.program, "two");
  auto addExp = [&] {
    BlockGraphBuilder block({2, 1, 1}, threads, 1, {builder.desc(0)});
    const TensorId tile = block.input(0, {0, -1, -1}, -1, "x");
    block.output(block.op(OpKind::Exp, {tile}, {}, "y"), {0, -1, -1});
    builder.blockGraph("exp_kernel", block.block(), {0}, {{"Y", DType::F32}});
  };
  if (!squareFirst) addExp();
  builder.op(OpKind::Square, {0}, {}, "Z");
  if (squareFirst) addExp();
  builder.output(*builder.graph().findTensor("Y"));
  builder.output(*builder.graph().findTensor("Z"));
  schedule.graph = builder.finish();
  return schedule;
}

TEST(ScheduleHash, IgnoresTheOrderOfIndependentKernels) {
  EXPECT_FALSE(twoKernelSchedule(false, 128) == twoKernelSchedule(true, 128));
  EXPECT_EQ(scheduleHash(twoKernelSchedule(false, 128)),
            scheduleHash(twoKernelSchedule(true, 128)));
  EXPECT_NE(scheduleHash(twoKernelSchedule(false, 128)),
            scheduleHash(twoKernelSchedule(false, 64)));
}

}  // namespace
}  // namespace mugraph::graph
