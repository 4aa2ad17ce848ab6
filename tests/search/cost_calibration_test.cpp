// The calibrated cost model against the kernels measured on an H100
// (docs/measurements/cost_calibration_h100.json): the variant it ranks first for every
// built-in program measures within 10% of the fastest; leaving a program out judges it by a
// fit to the others alone; a fit recovers the ranking of
// measurements made by known constants; malformed data is a UserError naming its JSON path.
#include <gtest/gtest.h>

#include <fstream>

#include "graph/error.h"
#include "graph/files.h"
#include "search/cost_calibration.h"

namespace mugraph::search {
namespace {

const std::string kData =
    std::string(MUGRAPH_SOURCE_DIR) + "/docs/measurements/cost_calibration_h100.json";

TEST(CostCalibration, EveryBuiltInProgramsFirstChoiceMeasuresWithinTenPercentOfTheFastest) {
  const CalibrationData data = loadCalibrationData(kData);
  const CalibrationReport report =
      evaluateCostModel(data, plan::targetByName(data.target), calibratedConstants());
  int builtins = 0;
  for (const ProgramFit& program : report.programs) {
    if (!program.builtin) continue;
    ++builtins;
    EXPECT_LE(program.regret(), 0.10)
        << program.program << ": first choice " << program.firstChoice << " measured "
        << program.firstChoiceMeasured << " us, fastest " << program.fastest << " "
        << program.fastestMeasured << " us";
  }
  EXPECT_EQ(builtins, 5);
}

const std::string kSweep =
    std::string(MUGRAPH_SOURCE_DIR) + "/docs/measurements/cost_calibration_gemm_sweep_h200.json";

TEST(CostCalibration, EverySweptGemmsFirstChoiceMeasuresWithinFivePercentOfTheFastest) {
  // Issue 27's sweep on an H200: squares 512-8192 and the LLM projections (m 16-2048), each
  // with the variants the search once ranked first. Before the fix of the per-SM loads and
  // the L2 re-read discount, the skinny projections were ranked up to 89% off their fastest
  // (a split-K pair before the one kernel that streams its weights at copy speed).
  const CalibrationData data = loadCalibrationData(kSweep);
  ASSERT_EQ(data.programs.size(), 40u);
  const CalibrationReport report =
      evaluateCostModel(data, plan::targetByName(data.target), calibratedConstants());
  for (const ProgramFit& program : report.programs) {
    EXPECT_LE(program.regret(), 0.05)
        << program.program << ": first choice " << program.firstChoice << " measured "
        << program.firstChoiceMeasured << " us, fastest " << program.fastest << " "
        << program.fastestMeasured << " us";
  }
}

TEST(CostCalibration, TheClusteredSweepsFirstChoicesMeasureWithinNineteenPercentOfTheFastest) {
  // The sweep again with pairs of blocks in clusters among the candidates, along x (B
  // multicast), then three-consumer 192-row tiles, then pairs along y (A multicast)
  // (session 43, H200). Unaligned rows (1000, 3000: rows of 2000 and 6000 bytes) make the
  // loads bound the kernel, and there the pairs win (3000^3: 100 us against 128 alone; 1000^3
  // along y: 12.6-13.0 against 14.7); where rows are aligned they lose a few percent (4096^3:
  // 213 against 201; 1024^3: 10.8-11.1 against 9.6). The worst first choice is
  // 512x4096x4096 f16 (18.9%: a general-path kernel ranked over the 128 x 128 sketch).
  for (const char* file : {"cost_calibration_gemm_sweep44_h200.json",
                           "cost_calibration_gemm_sweep46_h200.json",
                           "cost_calibration_gemm_sweep48_h200.json"}) {
    const CalibrationData data = loadCalibrationData(std::string(MUGRAPH_SOURCE_DIR) +
                                                     "/docs/measurements/" + file);
    const CalibrationReport report =
        evaluateCostModel(data, plan::targetByName(data.target), calibratedConstants());
    ASSERT_GE(report.programs.size(), 7u) << file;
    for (const ProgramFit& program : report.programs) {
      EXPECT_LE(program.regret(), 0.19)
          << program.program << ": first choice " << program.firstChoice << " measured "
          << program.firstChoiceMeasured << " us, fastest " << program.fastest << " "
          << program.fastestMeasured << " us";
    }
  }
}

TEST(CostCalibration, SeveralFilesAreJudgedAsOneAndMayNotRepeatAProgram) {
  const CalibrationData one = loadCalibrationData(kData);
  const CalibrationData both = loadCalibrationData(std::vector<std::string>{kData, kSweep});
  EXPECT_EQ(both.programs.size(), one.programs.size() + 40);
  EXPECT_NE(both.device.find(" + "), std::string::npos) << both.device;
  try {
    loadCalibrationData(std::vector<std::string>{kData, kData});
    ADD_FAILURE() << "a program given twice was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("is in"), std::string::npos) << e.what();
  }
}

TEST(CostCalibration, TheModelRanksBadlyWithUncalibratedConstants) {
  // What the check above guards: before the fit, some built-in program is ranked badly.
  const CalibrationData data = loadCalibrationData(kData);
  const CalibrationReport report =
      evaluateCostModel(data, plan::targetByName(data.target), CostConstants{});
  EXPECT_GT(report.worstRegret, 0.10);
}

TEST(CostCalibration, AFitRecoversTheRankingOfTimesMadeByKnownConstants) {
  CalibrationData data = loadCalibrationData(kData);
  const plan::Target& target = plan::targetByName(data.target);
  CostConstants truth = calibratedConstants();
  truth.launchMicroseconds *= 2.0;
  truth.elementMicroseconds *= 0.5;
  truth.bandwidthEfficiency *= 0.8;
  for (CalibrationProgram& program : data.programs) {
    for (CalibrationVariant& variant : program.variants) {
      variant.measuredMicroseconds =
          estimateCost(variant.schedule.graph, target, truth).microseconds;
    }
  }
  const CalibrationReport before = evaluateCostModel(data, target, calibratedConstants());
  const CostConstants fitted = fitCostConstants(data, target, calibratedConstants());
  const CalibrationReport after = evaluateCostModel(data, target, fitted);
  EXPECT_LE(after.summedRegret, before.summedRegret);
  EXPECT_LT(after.meanSquaredLogError, 0.1 * before.meanSquaredLogError);
  EXPECT_LE(after.worstRegret, 0.02);
}

TEST(CostCalibration, LeaveOneOutJudgesEachProgramByConstantsFittedToTheOthersOnly) {
  CalibrationData data = loadCalibrationData(kData);
  const plan::Target& target = plan::targetByName(data.target);
  // Three programs of few variants keep the four fits quick.
  std::vector<CalibrationProgram> few;
  for (const CalibrationProgram& program : data.programs) {
    if (program.program == "gqa_decode_1k" || program.program == "gqa_decode_8k" ||
        program.program == "gemm_768x3072x768") {
      few.push_back(program);
    }
  }
  ASSERT_EQ(few.size(), 3u);
  data.programs = few;
  const CalibrationReport held = leaveOneOut(data, target, calibratedConstants());
  ASSERT_EQ(held.programs.size(), 3u);
  for (size_t p = 0; p < few.size(); ++p) {
    CalibrationData rest = data;
    rest.programs.erase(rest.programs.begin() + static_cast<std::ptrdiff_t>(p));
    CalibrationData alone = data;
    alone.programs = {few[p]};
    const ProgramFit expected =
        evaluateCostModel(alone, target, fitCostConstants(rest, target, calibratedConstants()))
            .programs.front();
    EXPECT_EQ(held.programs[p].program, few[p].program);
    EXPECT_EQ(held.programs[p].firstChoice, expected.firstChoice);
    EXPECT_DOUBLE_EQ(held.programs[p].regret(), expected.regret());
    EXPECT_GE(held.worstRegret, expected.regret());
  }
}

TEST(CostCalibration, ConstantsRoundTripThroughTheirJson) {
  const CostConstants constants = calibratedConstants();
  const CostConstants back = costConstantsFromJson(costConstantsJson(constants, "test"), "test");
  for (const CostConstantField& field : costConstantFields()) {
    EXPECT_EQ(constants.*field.member, back.*field.member) << field.name;
  }
}

std::string writeTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(CostCalibration, MalformedDataNamesTheFileAndTheJsonPath) {
  const auto reasonOf = [](const std::string& path) {
    try {
      loadCalibrationData(path);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string notJson = reasonOf(writeTemp("not_json.json", "{"));
  EXPECT_NE(notJson.find("not_json.json:1:"), std::string::npos) << notJson;
  EXPECT_NE(notJson.find("invalid JSON"), std::string::npos) << notJson;
  // A number no double holds is refused the same way (the fuzzer's first find, issue 31).
  EXPECT_NE(reasonOf(writeTemp("huge.json", R"({"format": 1e999999})")).find("invalid JSON"),
            std::string::npos);
  EXPECT_NE(reasonOf(writeTemp("format.json", R"({"format": "x"})")).find("$.format"),
            std::string::npos);
  const std::string negative = writeTemp(
      "negative.json",
      R"({"format": "mugraph.cost_calibration", "device": "d", "target": "sm_90", "method": "m",
          "programs": [{"program": "p", "variants": [{"name": "v", "measured_us": -1}]}]})");
  EXPECT_NE(reasonOf(negative).find("$.programs[0].variants[0].measured_us"), std::string::npos);
  EXPECT_THROW(loadCostConstants(writeTemp("constants.json", "{")), UserError);
  EXPECT_THROW(costConstantsFromJson(nlohmann::json{{"format", "mugraph.cost_constants"},
                                                    {"constants", {{"launch_us", 1.0}}}},
                                     "c.json"),
               UserError);
}

}  // namespace
}  // namespace mugraph::search
