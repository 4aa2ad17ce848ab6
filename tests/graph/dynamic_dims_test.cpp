// Dynamic dims (issue 28) in the graph layer: the .mg and JSON syntax and its errors, round
// trips, hashes, validation of length-independent schedules, and instantiate() at lengths.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/dynamic_dims.h"
#include "graph/error.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "graph/json_format.h"
#include "graph/program_text.h"
#include "graph/tile_splits.h"
#include "graph/validate.h"
#include "tests/dynamic_schedules.h"

namespace mugraph::graph {
namespace {

using ::testing::HasSubstr;

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

std::string textError(const std::string& text) {
  return errorOf([&] { parseProgramText(text, "p.mg"); });
}

std::string jsonError(nlohmann::json json) {
  return errorOf([&] { programFromJson(json, "p.json", "$"); });
}

TEST(DynamicDims, TextDeclaresADimAndShapesNameIt) {
  const Program p = parseProgramText(testing::kDynamicAttentionText, "a.mg");
  ASSERT_EQ(p.dims.size(), 1u);
  EXPECT_EQ(p.dims[0], (DynamicDim{"s", 1, 2048}));
  const TensorDesc& k = p.tensors[*p.findTensor("K")];
  EXPECT_EQ(k.shape, (Dims{2, 32, 2048}));  // the reference extent: the range's max
  EXPECT_EQ(k.dynamicDims, (std::vector<int>{kStaticDim, kStaticDim, 0}));
  // Results follow their ops: the scores' columns are s, the row max is static.
  EXPECT_EQ(p.tensors[*p.findTensor("A")].dynamicDims, (std::vector<int>{-1, -1, 0}));
  EXPECT_TRUE(p.tensors[*p.findTensor("M")].dynamicDims.empty());
  EXPECT_TRUE(p.tensors[*p.findTensor("O")].dynamicDims.empty());
}

TEST(DynamicDims, TextAndJsonRoundTrip) {
  const Program p = parseProgramText(testing::kDynamicAttentionText, "a.mg");
  const std::string printed = programToText(p);
  EXPECT_THAT(printed, HasSubstr("\ndim s in [1, 2048]\ninput Q f16 [2, 16, 32]\n"
                                 "input K f16 [2, 32, s]\ninput V f16 [2, s, 32]\n"));
  EXPECT_EQ(parseProgramText(printed, "printed.mg"), p);
  const nlohmann::json json = programToJson(p);
  EXPECT_EQ(json.at("dims"), nlohmann::json::parse(R"([{"name":"s","min":1,"max":2048}])"));
  EXPECT_EQ(json.at("inputs")[1].at("shape"), nlohmann::json::parse(R"([2, 32, "s"])"));
  const Program back = programFromJson(nlohmann::json::parse(json.dump()), "a.json", "$");
  EXPECT_EQ(back, p);
  EXPECT_EQ(programToText(back), printed);
}

TEST(DynamicDims, StaticProgramsHaveNoDimsKeyAndHashApart) {
  std::string staticText = testing::kDynamicGemmText;
  staticText.replace(staticText.find("dim m in [1, 4096]\n"), 19, "");
  staticText.replace(staticText.find("[m, 128]"), 8, "[4096, 128]");
  const Program fixed = parseProgramText(staticText, "s.mg");
  const Program dynamic = parseProgramText(testing::kDynamicGemmText, "d.mg");
  EXPECT_FALSE(programToJson(fixed).contains("dims"));
  EXPECT_NE(programHash(fixed), programHash(dynamic));
  Program otherRange = dynamic;
  otherRange.dims[0].min = 2;
  EXPECT_NE(programHash(otherRange), programHash(dynamic));
}

TEST(DynamicDims, TextErrorsNameTheLine) {
  EXPECT_THAT(textError("dim s in [1, 8]\ninput X f32 [t, 4]\nY = exp(X)\noutput Y\n"),
              HasSubstr("p.mg:2: unknown dim 't'"));
  EXPECT_THAT(textError("dim s in [0, 8]\ninput X f32 [s]\nY = exp(X)\noutput Y\n"),
              HasSubstr("p.mg:1: dim 's' has min 0 (must be >= 1)"));
  EXPECT_THAT(textError("dim s in [9, 8]\ninput X f32 [s]\nY = exp(X)\noutput Y\n"),
              HasSubstr("p.mg:1: dim 's' has min 9 > max 8"));
  EXPECT_THAT(
      textError("dim s in [1, 8]\ndim s in [1, 9]\ninput X f32 [s]\nY = exp(X)\noutput Y\n"),
      HasSubstr("p.mg:2: dim 's' is declared twice"));
  EXPECT_THAT(textError("dim X in [1, 8]\ninput X f32 [X]\nY = exp(X)\noutput Y\n"),
              HasSubstr("p.mg:1: dim 'X' has the name of a tensor"));
  EXPECT_THAT(textError("input X f32 [4]\ndim s in [1, 8]\nY = exp(X)\noutput Y\n"),
              HasSubstr("p.mg:2: dims must be declared before the inputs"));
}

TEST(DynamicDims, JsonErrorsNameThePath) {
  const nlohmann::json good = programToJson(
      parseProgramText("dim s in [1, 8]\ninput X f32 [s]\nY = exp(X)\noutput Y\n", "p.mg"));
  nlohmann::json j = good;
  j.erase("hash");
  j["inputs"][0]["shape"][0] = "t";
  EXPECT_THAT(jsonError(j), HasSubstr("p.json: $.inputs[0].shape[0]: unknown dim 't'"));
  j = good;
  j.erase("hash");
  j["dims"][0]["min"] = 0;
  EXPECT_THAT(jsonError(j), HasSubstr("$.dims[0].min: dim 's' has min 0"));
  j["dims"][0]["min"] = 9;
  EXPECT_THAT(jsonError(j), HasSubstr("$.dims[0].max: dim 's' has min 9 > max 8"));
  j = good;
  j.erase("hash");
  j["dims"].push_back(j["dims"][0]);
  EXPECT_THAT(jsonError(j), HasSubstr("$.dims[1].name: dim 's' is declared twice"));
  j = good;
  j.erase("hash");
  j["dims"][0]["name"] = "Y";
  j["inputs"][0]["shape"][0] = "Y";
  EXPECT_THAT(jsonError(j), HasSubstr("$.dims[0].name: dim 'Y' has the name of the tensor at"));
}

TEST(DynamicDims, SchedulesRoundTripThroughJson) {
  for (const Schedule& s : {testing::dynamicGemmSchedule(), testing::dynamicAttentionSchedule(),
                            testing::dynamicSplitKvSchedule()}) {
    const nlohmann::json json = scheduleToJson(s);
    EXPECT_EQ(scheduleFromJson(nlohmann::json::parse(json.dump()), "s.json"), s) << s.name;
  }
}

TEST(DynamicDims, ShippedDynamicFilesAreTheTestSchedules) {
  const std::string dir = std::string(MUGRAPH_SOURCE_DIR) + "/schedules/dynamic/";
  EXPECT_EQ(loadProgram(dir + "gemm_dynamic_m.mg"), testing::dynamicGemmSchedule().program);
  EXPECT_EQ(loadSchedule(dir + "gemm_dynamic_m.grid128.json"), testing::dynamicGemmSchedule());
  EXPECT_EQ(loadProgram(dir + "attention_dynamic_kv.mg"),
            testing::dynamicAttentionSchedule().program);
  EXPECT_EQ(loadSchedule(dir + "attention_dynamic_kv.online64.json"),
            testing::dynamicAttentionSchedule());
  EXPECT_EQ(loadSchedule(dir + "attention_dynamic_kv.split4x64.json"),
            testing::dynamicSplitKvSchedule());
}

TEST(DynamicDims, InstantiateSetsGridsFromTheDeclaredTile) {
  const Schedule s = testing::dynamicGemmSchedule();
  for (const auto& [m, parts] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {100, 1}, {128, 1}, {129, 2}, {1000, 8}, {4096, 32}}) {
    const Schedule at = instantiate(s, {{"m", m}});
    EXPECT_EQ(at.graph.ops[0].block->grid[0], parts) << "m=" << m;
    EXPECT_EQ(at.graph.tensors[*at.graph.findTensor("C")].shape, (Dims{m, 64}));
    EXPECT_EQ(at.program.tensors[*at.program.findTensor("A")].shape, (Dims{m, 128}));
    EXPECT_TRUE(at.graph.dims.empty());
    EXPECT_EQ(at.graph.ops[0].block->tensors, s.graph.ops[0].block->tensors);  // tiles fixed
  }
}

TEST(DynamicDims, InstantiateSetsTripCountsFromTheDeclaredTile) {
  const Schedule s = testing::dynamicAttentionSchedule();
  for (const auto& [n, trips] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {64, 1}, {65, 2}, {1000, 16}, {2048, 32}}) {
    EXPECT_EQ(instantiate(s, {{"s", n}}).graph.ops[0].block->forloop, trips) << "s=" << n;
  }
}

TEST(DynamicDims, InstantiateRefusesLengthsOutsideTheRangeOrMissing) {
  const Schedule s = testing::dynamicGemmSchedule();
  EXPECT_THAT(errorOf([&] {
                instantiate(s, {{"m", 4097}});
              }),
              HasSubstr("m=4097 is outside the range [1, 4096] of dynamic dim 'm'"));
  EXPECT_THAT(errorOf([&] { instantiate(s, {}); }),
              HasSubstr("needs a length for dynamic dim 'm'"));
  EXPECT_THAT(errorOf([&] {
                instantiate(s, {{"m", 5}, {"q", 3}});
              }),
              HasSubstr("has no dynamic dim 'q'"));
}

TEST(DynamicDims, ASplitOfFixedPartsKeepsItsPartsAndTakesTheTripsFromTheLength) {
  DynamicCut cut;
  cut.dim = 0;
  cut.gridAxis = 1;
  cut.loop = true;
  cut.tile = 64;
  cut.parts = 4;
  for (const auto& [n, trips] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {100, 1}, {256, 1}, {257, 2}, {768, 3}, {2048, 8}}) {
    EXPECT_EQ(cutCounts(cut, n).parts, 4) << "n=" << n;
    EXPECT_EQ(cutCounts(cut, n).forloop, trips) << "n=" << n;
  }
}

// At 100 keys the four parts of one trip of 64 hold 64, 36, 0 and 0 keys: the instantiated
// schedule keeps grid.y = 4 and validates, its last two parts empty (graph/tile_splits.h).
TEST(DynamicDims, InstantiatingASplitAtAShortLengthLeavesItsLastPartsEmpty) {
  const Schedule s = testing::dynamicSplitKvSchedule();
  const Schedule at = instantiate(s, {{"s", 100}});
  const BlockGraph& split = *at.graph.ops[0].block;
  EXPECT_EQ(split.grid[1], testing::kSplitKvParts);
  EXPECT_EQ(split.forloop, 1);
  std::vector<Dims> inputs;
  for (TensorId t : at.graph.ops[0].inputs) inputs.push_back(at.graph.tensors[t].shape);
  const DimSplit keys = blockTileSplits(split, inputs)[1][2];
  EXPECT_EQ(keys.parts(), 4);
  EXPECT_EQ(keys.realParts(), 2);
  EXPECT_EQ(keys.iterationsIn(1), 1);
  EXPECT_EQ(keys.iterationsIn(2), 0);
  EXPECT_EQ(keys.realExtent(1, 0), 36);
  EXPECT_EQ(keys.realExtent(3, 0), 0);
  EXPECT_TRUE(keys.hasEmptyIterations());
  EXPECT_EQ(keys.lastTile(), 36);
  EXPECT_EQ(instantiate(s, {{"s", 2048}}).graph.ops[0].block->forloop, 8);
}

TEST(DynamicDims, ValidationRefusesADynamicCutWithoutADeclaredTile) {
  Schedule s = testing::dynamicGemmSchedule();
  s.graph.ops[0].block->ops[0].tile.clear();
  EXPECT_THAT(errorOf([&] {
                try {
                  validateSchedule(s);
                } catch (const IrError& e) {
                  throw UserError("", e.what());
                }
              }),
              HasSubstr("cuts it without a declared tile: the schedule is not length-independent"));
  nlohmann::json json = scheduleToJson(testing::dynamicGemmSchedule());
  json.erase("hash");
  json["kernels"][0]["ops"][0].erase("tile");
  EXPECT_THAT(errorOf([&] { scheduleFromJson(json, "s.json"); }),
              HasSubstr("s.json: $.kernels[0].ops[0].tile: dim 0 of 'A' is dynamic dim 'm'"));
}

}  // namespace
}  // namespace mugraph::graph
