// The pieces PyTorch exports are superoptimized as they are imported: the search finds
// variants of each that verify at the finite-field level (the best level: sigmoid and sqrt
// are random functions there, add_scalar's epsilon is exact).
#include <gtest/gtest.h>

#include "onnx_import/import_model.h"
#include "search/superoptimize.h"

namespace mugraph::onnx_import {
namespace {

search::SearchResult searchSubgraph(const std::string& name, double seconds) {
  const ImportedModel m = importModel(
      std::string(MUGRAPH_SOURCE_DIR) + "/tests/onnx_import/models/" + name + ".onnx", {});
  EXPECT_EQ(m.subgraphs.size(), 1u);
  search::SearchOptions options;
  options.config = search::defaultConfig(search::classifyProgram(m.subgraphs.at(0).program));
  options.config.maxVariants = 2;
  options.timeLimitSeconds = seconds;
  options.threads = 2;
  options.progress = false;
  return search::superoptimize(m.subgraphs.at(0).program, options);
}

void expectVerifiedInTheField(const search::SearchResult& result, const std::string& name) {
  ASSERT_FALSE(result.variants.empty()) << name;
  for (const search::VerifiedVariant& v : result.variants) {
    EXPECT_EQ(v.verification.level, "finite-field") << name << " " << v.name;
    EXPECT_LE(v.verification.falseAcceptBound, 1e-12) << name << " " << v.name;
  }
}

TEST(ImportedSearch, LlamaMlpVariantsVerifyInTheField) {
  expectVerifiedInTheField(searchSubgraph("llama_mlp", 20), "llama_mlp");
}

TEST(ImportedSearch, RmsNormVariantsVerifyInTheField) {
  const search::SearchResult result = searchSubgraph("rmsnorm", 20);
  expectVerifiedInTheField(result, "rmsnorm");
  // The best fuses the whole norm into one kernel.
  EXPECT_EQ(result.variants.at(0).schedule.graph.ops.size(), 1u);
}

TEST(ImportedSearch, AttentionCoreVariantsVerifyInTheField) {
  expectVerifiedInTheField(searchSubgraph("attention_core", 15), "attention_core");
}

}  // namespace
}  // namespace mugraph::onnx_import
