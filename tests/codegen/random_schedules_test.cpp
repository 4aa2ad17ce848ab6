// Random valid schedules (tests/graph/random_graphs.h: every op, ranks 1-4, broadcasting,
// transposed inputs, grid splits, for-loops with accumulators, fusion records, epilogue
// outputs, 32 to 512 threads) emit code that NVRTC compiles and assembles, and that computes
// what the interpreter computes when run on the CPU emulation of CUDA.
#include <gtest/gtest.h>

#include "codegen_test_support.h"
#include "emulated_kernels.h"
#include "graph/random_graphs.h"

namespace mugraph::codegen::testing {
namespace {

inline constexpr int kRandomSchedules = 24;

// Many random schedules side by side, so that one compile covers them all.
graph::Schedule randomSchedules(uint64_t firstSeed) {
  graph::Schedule merged;
  merged.name = "random_schedules";
  merged.program.name = merged.graph.name = "random_schedules";
  for (int i = 0; i < kRandomSchedules; ++i) {
    const graph::Schedule schedule =
        lowerPredefinedOps(mugraph::testing::RandomGraphs(firstSeed + i).schedule());
    const std::string prefix = "r" + std::to_string(i) + "_";
    appendGraph(schedule.program, prefix, merged.program);
    appendGraph(schedule.graph, prefix, merged.graph);
  }
  graph::validateSchedule(merged);
  return merged;
}

TEST(RandomSchedules, CompileAndAssemble) {
  const GeneratedCode& code = compiledOnce("random_schedules", [] { return randomSchedules(100); });
  EXPECT_FALSE(code.cubin.empty());
  EXPECT_EQ(code.ptx.size(), 1u);
  ASSERT_EQ(code.resources.size(), code.emitted.kernels.size());
  for (const KernelResources& r : code.resources) EXPECT_GT(r.registers, 0) << r.entry;
}

TEST(RandomSchedules, MatchTheInterpreterWhenEmulated) {
  if (!kCanEmulate) GTEST_SKIP() << "the CUDA emulation switches contexts on x86-64 only";
  expectMatchesInterpreter(randomSchedules(100), 21, 1.0);
  expectMatchesInterpreter(randomSchedules(500), 22, 1.0);
}

}  // namespace
}  // namespace mugraph::codegen::testing
