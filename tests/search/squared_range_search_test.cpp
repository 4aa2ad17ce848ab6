// The search never keeps a square, or a sum of squares, between kernels in 16 bits
// (graph/value_ranges.h): f16 overflows at squares of 256, and at sums of 2048 squares of 5.7.
// On a decode step's o_proj + residual + RMSNorm + projection, a kernel that stores the
// residual's square for the next kernel's sum is pruned; the variants compute it where they sum.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

#include "graph/program_text.h"
#include "search_support.h"

namespace mugraph::search {
namespace {

std::string withoutDigits(std::string name) {
  while (!name.empty() && std::isdigit(static_cast<unsigned char>(name.back()))) name.pop_back();
  return name;
}

TEST(SquaredRangeSearch, NoVariantStoresASquareBetweenKernelsInSixteenBits) {
  const graph::Program program = graph::parseProgramText(R"(program norm_between_projections
input X f16 [1, 256]
input Wo f16 [256, 256] layout=transposed
input R f16 [1, 256]
input G f16 [1, 256]
input Wq f16 [256, 128] layout=transposed
H = add(R, matmul(X, Wo))
SQ = square(H)
SSQ = reduce_sum(SQ, dim=1)
MSQ = scale(SSQ, c=0.00390625)
ESQ = add_scalar(MSQ, c=1e-06)
Y = matmul(mul(G, div(H, sqrt(ESQ))), Wq)
output H
output Y
)",
                                                         "norm_between_projections.mg");
  SearchOptions options = testing::quietOptions(program);
  options.config.maxVariants = 8;
  const SearchResult result = superoptimize(program, options);
  ASSERT_FALSE(result.variants.empty());
  EXPECT_GT(result.summary.stats.pruned[static_cast<int>(PruneReason::SquaredRange)], 0u)
      << "some candidate stored the square or its sum between kernels";
  const std::set<std::string> squared = {"SQ", "SSQ", "MSQ", "ESQ"};
  for (const VerifiedVariant& v : result.variants) {
    SCOPED_TRACE(v.name);
    const graph::KernelGraph& g = v.schedule.graph;
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      if (!squared.count(withoutDigits(g.tensors[t].name))) continue;
      EXPECT_EQ(g.tensors[t].dtype, graph::DType::F32) << g.tensors[t].name;
    }
  }
}

}  // namespace
}  // namespace mugraph::search
