// Calibrating the cost model against measured kernels. The data (a JSON file, "format":
// "mugraph.cost_calibration") lists programs, each with variants: a schedule and its measured
// GPU time. The model is judged as the search uses it: per program, the variant it ranks
// first should measure close to the fastest (its regret: first choice's time / best − 1),
// and its estimates should track the measurements (mean squared log error). `fit` walks the
// constants (cost_model.h, costConstantFields) in multiplicative steps, keeping each change
// that lowers the worst regret, then the summed regret, then the log error.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/ir.h"
#include "plan/target.h"
#include "search/cost_model.h"

namespace mugraph::search {

inline constexpr const char* kCalibrationFormat = "mugraph.cost_calibration";

struct CalibrationVariant {
  std::string name;
  graph::Schedule schedule;
  double measuredMicroseconds = 0;
};

struct CalibrationProgram {
  std::string program;
  bool builtin = false;  // a built-in program of `mugraph superoptimize`
  std::vector<CalibrationVariant> variants;
};

struct CalibrationData {
  std::string device;  // where the times were measured
  std::string target;  // the --arch they calibrate ("sm_90")
  std::string method;  // how they were timed
  std::vector<CalibrationProgram> programs;
};

// UserError naming the file and the JSON path of anything malformed.
CalibrationData loadCalibrationData(const std::string& path);

// Several files as one: their programs in order, their devices and methods joined. The files
// must calibrate one target, and no program may appear twice (UserError naming the files).
CalibrationData loadCalibrationData(const std::vector<std::string>& paths);

struct VariantFit {
  std::string name;
  double estimated = 0;
  double measured = 0;
};

struct ProgramFit {
  std::string program;
  std::vector<VariantFit> variants;  // in the data's order
  bool builtin = false;
  std::string firstChoice;  // the variant the model ranks first
  double firstChoiceMeasured = 0;
  double firstChoiceEstimated = 0;
  std::string fastest;  // the variant that measured fastest
  double fastestMeasured = 0;
  double regret() const { return firstChoiceMeasured / fastestMeasured - 1.0; }
};

struct CalibrationReport {
  std::vector<ProgramFit> programs;
  double meanSquaredLogError = 0;  // over every variant, natural log of estimate / measured
  double worstRegret = 0;
  double summedRegret = 0;
};

CalibrationReport evaluateCostModel(const CalibrationData& data, const plan::Target& target,
                                    const CostConstants& constants);

// Constants that rank `data` better, starting from `start` (see the header comment).
CostConstants fitCostConstants(const CalibrationData& data, const plan::Target& target,
                               const CostConstants& start);

// Out of sample: per program, the constants fitted (from `start`) to every other program,
// judged on that program alone. The report's programs are the held-out judgements; a model
// that ranks well here ranks a program nobody measured, which is what a user brings. The fits
// run in parallel; `progress`, if given, is called (from any thread, one call at a time) with
// the fits done and their count as each ends.
CalibrationReport leaveOneOut(
    const CalibrationData& data, const plan::Target& target, const CostConstants& start,
    const std::function<void(size_t done, size_t total)>& progress = nullptr);

// Constants from a cost-constants JSON (search/cost_constants.json's format); UserError
// naming `where` and the JSON path of anything missing.
CostConstants costConstantsFromJson(const nlohmann::json& file, const std::string& where);

// The constants of a cost-constants file; UserError naming the file for anything malformed.
CostConstants loadCostConstants(const std::string& path);

// search/cost_constants.json's content for `constants`; `fittedFrom` says from what.
nlohmann::json costConstantsJson(const CostConstants& constants, const std::string& fittedFrom);

}  // namespace mugraph::search
