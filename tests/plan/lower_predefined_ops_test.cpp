// Default block-graph schedules of predefined ops: every one-op program (each op, several
// shapes, f16/bf16/f32, broadcasting, transposed operands) lowers to block graphs only,
// is equivalent to the program under the interpreter, and compiles with NVRTC.
#include <gtest/gtest.h>

#include "codegen/codegen_test_support.h"
#include "graph/program_text.h"
#include "graph/validate.h"
#include "verify/equivalence.h"

namespace mugraph::codegen::testing {
namespace {

TEST(LowerPredefinedOps, EveryOneOpProgramLowersToBlockGraphsOnly) {
  for (const OneOpCase& c : oneOpCases()) {
    SCOPED_TRACE(c.name);
    const graph::Schedule lowered = lowerProgram(c.program);
    EXPECT_EQ(lowered.name, c.name + ".default");
    ASSERT_EQ(lowered.graph.ops.size(), c.program.ops.size());
    for (const graph::KernelOp& op : lowered.graph.ops) {
      EXPECT_EQ(op.kind, graph::OpKind::BlockGraph);
    }
    EXPECT_NO_THROW(graph::validateSchedule(lowered));
  }
}

TEST(LowerPredefinedOps, EveryDefaultScheduleIsEquivalentToItsProgram) {
  verify::EquivalenceOptions options;
  options.seed = 20260601;
  options.trials = 2;  // float tests at three scales plus two fingerprints; fast enough for CI
  for (const OneOpCase& c : oneOpCases()) {
    SCOPED_TRACE(c.name);
    const graph::Schedule lowered = lowerProgram(c.program);
    const verify::EquivalenceReport report =
        verify::checkEquivalence(c.program, lowered.graph, options);
    EXPECT_TRUE(report.equivalent) << report.mismatch;
    EXPECT_LE(report.maxRelError, 1e-9);
  }
}

TEST(LowerPredefinedOps, MultiOpProgramsLowerOpByOpAndStayEquivalent) {
  for (const char* name : {"gqa_mirage.mg", "gqa_decode_4k.mg"}) {
    SCOPED_TRACE(name);
    const graph::Program program =
        graph::loadProgram(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/" + name);
    const graph::Schedule lowered = lowerProgram(program);
    EXPECT_EQ(lowered.graph.ops.size(), program.ops.size());
    EXPECT_TRUE(lowered.graph.isProgram() == false);
    verify::EquivalenceOptions options;
    options.seed = 7;
    options.trials = 1;
    options.floatScales = {0.5};
    const verify::EquivalenceReport report =
        verify::checkEquivalence(program, lowered.graph, options);
    EXPECT_TRUE(report.equivalent) << report.mismatch;
  }
}

TEST(LowerPredefinedOps, BlockGraphKernelsAreKeptAsTheyAre) {
  const graph::Schedule shipped =
      graph::loadSchedule(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/gqa_mirage.split_kv.json");
  EXPECT_EQ(lowerPredefinedOps(shipped), shipped);
}

TEST(LowerPredefinedOps, MatmulTilesFillTheGpuOnTensorCoreShapes) {
  const auto lowered = [](const char* name) {
    return *lowerProgram(graph::loadProgram(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/" + name))
                .graph.ops[0]
                .block;
  };
  const graph::BlockGraph large = lowered("gemm_4096.mg");
  EXPECT_EQ(large.grid, (std::array<int64_t, 3>{32, 32, 1}));  // 128x128 tiles
  EXPECT_EQ(large.threads, 256);
  EXPECT_EQ(large.forloop, 128);
  const graph::BlockGraph small = lowered("gemm_1024.mg");
  EXPECT_EQ(small.grid, (std::array<int64_t, 3>{16, 16, 1}));  // 64x64: 256 blocks
  EXPECT_EQ(small.threads, 128);
}

// A small element-wise output is spread over several blocks (one block walking 4096 elements
// costs a decode's division 3 us on an H200); a large one keeps 4096-element blocks.
TEST(LowerPredefinedOps, ElementwiseBlocksSpreadASmallOutputAndCapALargeOne) {
  const auto blocks = [](const std::string& text) {
    const graph::Schedule lowered = lowerProgram(graph::parseProgramText(text, "p.mg"));
    const graph::BlockGraph& block = *lowered.graph.ops.at(0).block;
    return block.grid[0] * block.grid[1] * block.grid[2];
  };
  EXPECT_EQ(blocks("program d\ninput N f16 [8, 4, 128]\ninput S f16 [8, 4, 1]\n"
                   "O = div(N, S)\noutput O\n"),
            8);  // 512 elements each
  EXPECT_EQ(blocks("program a\ninput X f16 [4096, 4096]\ninput Y f16 [4096, 4096]\n"
                   "Z = add(X, Y)\noutput Z\n"),
            4096);  // 4096 elements each
}

TEST(LowerPredefinedOps, EveryDefaultScheduleCompilesForSm80AndSm90WithoutSpills) {
  const GeneratedCode& code = allOneOpCasesCompiled();
  ASSERT_EQ(code.emitted.kernels.size(), oneOpCases().size() + 1);  // sqrt(square(x))
  ASSERT_EQ(code.ptx.count("sm_80"), 1u);
  ASSERT_EQ(code.ptx.count("sm_90"), 1u);
  EXPECT_FALSE(code.cubin.empty());
  for (size_t k = 0; k < code.emitted.kernels.size(); ++k) {
    const std::string& entry = code.emitted.kernels[k].entry;
    SCOPED_TRACE(entry);
    EXPECT_NE(code.ptx.at("sm_80").find(".entry " + entry), std::string::npos);
    EXPECT_NE(code.ptx.at("sm_90").find(".entry " + entry), std::string::npos);
    EXPECT_EQ(code.resources[k].entry, entry);
    EXPECT_GT(code.resources[k].registers, 0);
    EXPECT_EQ(code.resources[k].spillStoreBytes, 0);
    EXPECT_EQ(code.resources[k].spillLoadBytes, 0);
    EXPECT_LE(code.emitted.kernels[k].dynamicSharedBytes, testTarget().defaultDynamicSharedBytes);
  }
}

}  // namespace
}  // namespace mugraph::codegen::testing
