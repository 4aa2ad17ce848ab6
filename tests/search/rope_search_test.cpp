// RoPE, x·cos + rotation(x)·sin over query heads, searched with either rotation: Llama's
// rotate_half and GPT-J's interleaved rotate_pairs. Each finds variants that verify at level
// finite-field (a rotation is a signed permutation, exact in the field), among them one
// kernel holding the whole program on the row-owned path (each warp a row of a head in
// registers, the rotation a register swap).
#include <gtest/gtest.h>

#include <string>

#include "graph/program_text.h"
#include "plan/kernel_plan.h"
#include "search/superoptimize.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

graph::Program ropeProgram(const std::string& rotation) {
  const std::string text =
      "program rope_" + rotation + "\ninput X f16 [8, 16, 64]\ninput C f16 [1, 16, 64]\n" +
      "input S f16 [1, 16, 64]\nY = add(mul(X, C), mul(" + rotation + "(X, dim=2), S))\noutput Y\n";
  return graph::parseProgramText(text, "rope.mg");
}

TEST(RopeSearch, EitherRotationFindsVerifiedRowOwnedVariants) {
  for (const std::string rotation : {"rotate_half", "rotate_pairs"}) {
    SCOPED_TRACE(rotation);
    const graph::Program program = ropeProgram(rotation);
    SearchOptions options = testing::quietOptions(program);
    options.config.maxVariants = 4;
    const SearchResult result = superoptimize(program, options);
    ASSERT_FALSE(result.variants.empty());
    bool oneRowOwnedKernel = false;
    for (const VerifiedVariant& v : result.variants) {
      SCOPED_TRACE(v.name);
      EXPECT_TRUE(v.verification.equivalent) << v.verification.detail;
      EXPECT_EQ(v.verification.level, "finite-field") << v.verification.detail;
      const graph::KernelGraph& g = v.schedule.graph;
      if (g.ops.size() == 1 && g.ops[0].block) {
        const plan::KernelPlan planned = plan::planKernel(g, 0, *options.config.target);
        oneRowOwnedKernel = oneRowOwnedKernel || planned.as<plan::RowOwnedPlan>() != nullptr;
      }
    }
    EXPECT_TRUE(oneRowOwnedKernel) << "no variant is one row-owned kernel";
  }
}

}  // namespace
}  // namespace mugraph::search
