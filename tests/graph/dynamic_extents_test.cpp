// graph/dynamic_extents.h: the strides and sizes of tensors with dynamic dims as products of
// the lengths, the launch counts of a kernel that takes the lengths (they agree with
// graph::instantiate at every length), and the manifest JSON of both, written and evaluated.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dynamic_schedules.h"
#include "graph/dynamic_extents.h"
#include "graph/error.h"

namespace mugraph::graph {
namespace {

using ::testing::HasSubstr;

TEST(DynamicExtents, StridesFollowTheLengthsInStorageOrder) {
  const Schedule attention = testing::dynamicAttentionSchedule();
  const TensorDesc& k = attention.graph.tensors.at(*attention.graph.findTensor("K"));
  // K [2, 32, s] row-major: strides 32·s, s, 1.
  EXPECT_EQ(storageStrideProducts(k), (std::vector<DimProduct>{{32, {0}}, {1, {0}}, {1, {}}}));
  EXPECT_EQ(elementProduct(k), (DimProduct{64, {0}}));
  // Stored transposed ([2, s, 32]): strides 32·s, 1, 32.
  TensorDesc transposed = k;
  transposed.layout = Layout::Transposed;
  EXPECT_EQ(storageStrideProducts(transposed),
            (std::vector<DimProduct>{{32, {0}}, {1, {}}, {32, {}}}));
  // At the reference they are graph::storageStrides.
  const DimValues reference = referenceValues(attention.graph);
  const std::vector<int64_t> strides = storageStrides(transposed.shape, transposed.layout);
  for (size_t d = 0; d < strides.size(); ++d) {
    EXPECT_EQ(storageStrideProducts(transposed)[d].at(attention.graph, reference), strides[d]);
  }
}

TEST(DynamicExtents, LaunchCountsAgreeWithInstantiateAtEveryLength) {
  const Schedule gemm = testing::dynamicGemmSchedule();
  const Schedule attention = testing::dynamicAttentionSchedule();
  const KernelLaunchCounts gemmCounts = kernelLaunchCounts(gemm.graph, gemm.graph.ops.at(0));
  EXPECT_EQ(gemmCounts.grid[0], (LaunchCount{1, 0, 128}));
  EXPECT_TRUE(gemmCounts.forloop.isStatic());
  const KernelLaunchCounts attentionCounts =
      kernelLaunchCounts(attention.graph, attention.graph.ops.at(0));
  EXPECT_EQ(attentionCounts.forloop, (LaunchCount{1, 0, 64}));
  EXPECT_EQ(attentionCounts.grid[0], (LaunchCount{2, kStaticDim, 1}));
  for (int64_t n : {1, 63, 64, 65, 127, 128, 129, 1000, 2048}) {
    const BlockGraph& g = *instantiate(gemm, {{"m", n}}).graph.ops.at(0).block;
    const BlockGraph& a = *instantiate(attention, {{"s", n}}).graph.ops.at(0).block;
    for (int axis = 0; axis < kGridAxes; ++axis) {
      EXPECT_EQ(gemmCounts.grid[axis].at(gemm.graph, {{"m", n}}), g.grid[axis]) << n;
      EXPECT_EQ(attentionCounts.grid[axis].at(attention.graph, {{"s", n}}), a.grid[axis]) << n;
    }
    EXPECT_EQ(gemmCounts.forloop.at(gemm.graph, {{"m", n}}), g.forloop) << n;
    EXPECT_EQ(attentionCounts.forloop.at(attention.graph, {{"s", n}}), a.forloop) << n;
  }
}

// Split-KV with fixed parts: the grid keeps its 4 parts and the trips are ⌈s / (4 · 64)⌉, the
// counts graph::instantiate computes at every length, those with empty parts included.
TEST(DynamicExtents, ASplitOfFixedPartsKeepsItsGridAndTakesItsTripsFromTheLength) {
  const Schedule split = testing::dynamicSplitKvSchedule();
  const KernelLaunchCounts counts = kernelLaunchCounts(split.graph, split.graph.ops.at(0));
  EXPECT_EQ(counts.grid[1], (LaunchCount{testing::kSplitKvParts, kStaticDim, 1}));
  EXPECT_EQ(counts.forloop, (LaunchCount{1, 0, testing::kSplitKvParts * 64}));
  for (int64_t n : {1, 100, 256, 257, 1000, 2048}) {
    const BlockGraph& b = *instantiate(split, {{"s", n}}).graph.ops.at(0).block;
    for (int axis = 0; axis < kGridAxes; ++axis) {
      EXPECT_EQ(counts.grid[axis].at(split.graph, {{"s", n}}), b.grid[axis]) << n;
    }
    EXPECT_EQ(counts.forloop.at(split.graph, {{"s", n}}), b.forloop) << n;
  }
}

TEST(DynamicExtents, TheManifestFormsEvaluateToTheirValues) {
  const Schedule gemm = testing::dynamicGemmSchedule();
  const DimProduct bytes{256, {0}};
  const nlohmann::json written = dimProductJson(bytes, gemm.graph);
  EXPECT_EQ(written, nlohmann::json::parse(R"([256, "m"])"));
  EXPECT_EQ(dimProductJson(DimProduct{96, {}}, gemm.graph), 96);
  const nlohmann::json count = launchCountJson(LaunchCount{1, 0, 128}, gemm.graph);
  EXPECT_EQ(count, nlohmann::json::parse(R"({"ceil_div": ["m", 128]})"));
  EXPECT_EQ(launchCountJson(LaunchCount{3, kStaticDim, 1}, gemm.graph), 3);
  for (int64_t m : {1, 127, 128, 129, 4096}) {
    EXPECT_EQ(evaluateDimProductJson(written, {{"m", m}}, "bytes"), 256 * m);
    EXPECT_EQ(evaluateLaunchCountJson(count, {{"m", m}}, "grid"), (m + 127) / 128);
  }
}

TEST(DynamicExtents, MalformedFormsAreErrorsWithTheirPath) {
  const auto fails = [](auto evaluate, const char* json, const std::string& reason) {
    try {
      evaluate(nlohmann::json::parse(json), DimValues{{"m", 5}}, "$.kernels[0].grid[0]");
      ADD_FAILURE() << json << " was evaluated";
    } catch (const UserError& e) {
      EXPECT_THAT(e.what(), HasSubstr("$.kernels[0].grid[0]"));
      EXPECT_THAT(e.what(), HasSubstr(reason));
    }
  };
  fails(evaluateLaunchCountJson, R"({"ceil_div": ["m", 0]})", "positive tile");
  fails(evaluateLaunchCountJson, R"({"ceil": ["m", 8]})", "ceil_div");
  fails(evaluateLaunchCountJson, R"({"ceil_div": ["s", 8]})", "dynamic dim 's'");
  fails(evaluateDimProductJson, R"([2, 1.5])", "an integer or a dim name");
  fails(evaluateDimProductJson, R"("m")", "a list of integers and dim names");
}

}  // namespace
}  // namespace mugraph::graph
