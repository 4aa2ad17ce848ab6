// `mugraph calibrate DATA... [--fit [--write FILE]] [--json]`: how well the cost model ranks
// kernels measured on a GPU (search/cost_calibration.h), and a refit of its constants.
#include <cstdio>
#include <iostream>

#include "graph/files.h"
#include "search/cost_calibration.h"
#include "tools/commands.h"

namespace mugraph::tools {
namespace {

void printReport(const search::CalibrationReport& report, const char* title) {
  std::printf("%s\n", title);
  std::printf("  %-16s %8s  %-18s %10s %10s  %-18s %10s  %7s\n", "program", "variants",
              "first choice", "estimated", "measured", "fastest", "measured", "regret");
  for (const search::ProgramFit& p : report.programs) {
    std::printf("  %-16s %8d  %-18s %10.1f %10.1f  %-18s %10.1f  %6.1f%%%s\n", p.program.c_str(),
                static_cast<int>(p.variants.size()), p.firstChoice.c_str(), p.firstChoiceEstimated,
                p.firstChoiceMeasured, p.fastest.c_str(), p.fastestMeasured, 100.0 * p.regret(),
                p.builtin ? "  (built-in)" : "");
  }
  std::printf("  worst regret %.1f%%, mean squared log error %.3f\n", 100.0 * report.worstRegret,
              report.meanSquaredLogError);
}

nlohmann::json reportJson(const search::CalibrationReport& report) {
  nlohmann::json programs = nlohmann::json::array();
  for (const search::ProgramFit& p : report.programs) {
    nlohmann::json variants = nlohmann::json::array();
    for (const search::VariantFit& v : p.variants) {
      variants.push_back(
          {{"name", v.name}, {"estimated_us", v.estimated}, {"measured_us", v.measured}});
    }
    programs.push_back({{"program", p.program},
                        {"builtin", p.builtin},
                        {"variants", variants},
                        {"first_choice", p.firstChoice},
                        {"first_choice_estimated_us", p.firstChoiceEstimated},
                        {"first_choice_measured_us", p.firstChoiceMeasured},
                        {"fastest", p.fastest},
                        {"fastest_measured_us", p.fastestMeasured},
                        {"regret", p.regret()}});
  }
  return {{"programs", programs},
          {"worst_regret", report.worstRegret},
          {"mean_squared_log_error", report.meanSquaredLogError}};
}

}  // namespace

Command addCalibrateCommand(CLI::App& app) {
  struct Options {
    std::vector<std::string> data;
    bool fit = false;
    std::string write;
    bool json = false;
    bool fromDefaults = false;
    bool leaveOneOut = false;
    std::string constants;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "calibrate",
      "Judge the cost model on measured kernels (DATA: \"format\": \"mugraph.cost_calibration\", "
      "e.g. docs/measurements/cost_calibration_h100.json; several files are judged as one): per "
      "program, the variant it ranks first against the fastest measured. --fit refits its constants; --write saves them "
      "(search/cost_constants.json is what the build embeds). No GPU needed.");
  sub->add_option("DATA", options->data, "calibration data files (one target)")->required();
  sub->add_flag("--fit", options->fit, "fit the constants to DATA, starting from the current ones");
  sub->add_option("--write", options->write,
                  "with --fit: write the fitted constants here (e.g. search/cost_constants.json, "
                  "then rebuild)");
  sub->add_flag("--from-defaults", options->fromDefaults,
                "with --fit or --leave-one-out: start fits from the uncalibrated defaults, not the "
                "embedded constants");
  sub->add_option("--constants", options->constants,
                  "judge (and start a fit from) the constants in this file instead of the "
                  "embedded ones");
  sub->add_flag("--leave-one-out", options->leaveOneOut,
                "also judge out of sample: each program ranked by the constants fitted (from "
                "the starting constants) to all the others");
  sub->add_flag("--json", options->json, "print the reports as one JSON object");
  return {
      sub, [options]() {
        if (!options->write.empty() && !options->fit) {
          std::cerr << "mugraph: --write needs --fit\n";
          return kExitBadInput;
        }
        const search::CalibrationData data = search::loadCalibrationData(options->data);
        std::string files;
        for (const std::string& path : options->data) files += (files.empty() ? "" : " + ") + path;
        const plan::Target& target = plan::targetByName(data.target, files + ": $.target");
        const search::CostConstants current = options->constants.empty()
                                                  ? search::calibratedConstants()
                                                  : search::loadCostConstants(options->constants);
        const search::CalibrationReport before = search::evaluateCostModel(data, target, current);
        nlohmann::json out{{"data", files},
                           {"device", data.device},
                           {"target", data.target},
                           {"current", reportJson(before)}};
        if (!options->json) printReport(before, "current constants:");
        if (options->fit) {
          const search::CostConstants fitted = search::fitCostConstants(
              data, target, options->fromDefaults ? search::CostConstants{} : current);
          const search::CalibrationReport after = search::evaluateCostModel(data, target, fitted);
          const nlohmann::json constants =
              search::costConstantsJson(fitted, files + " (" + data.device + ")");
          out["fitted"] = reportJson(after);
          out["fitted_constants"] = constants;
          if (!options->json) {
            printReport(after, "fitted constants:");
            std::cout << constants.dump(2) << "\n";
          }
          if (!options->write.empty()) {
            graph::writeFileAtomic(options->write, constants.dump(2) + "\n");
            if (!options->json) std::cout << "wrote " << options->write << "\n";
          }
        }
        if (options->leaveOneOut) {
          const search::CalibrationReport held = search::leaveOneOut(
              data, target, options->fromDefaults ? search::CostConstants{} : current,
              [](size_t done, size_t total) {
                std::cerr << "mugraph: leave one out: " << done << " of " << total
                          << " fits done\n";
              });
          out["leave_one_out"] = reportJson(held);
          if (!options->json) {
            printReport(held, "leave one out (each program judged by constants fitted to the others):");
          }
        }
        if (options->json) std::cout << out.dump(2) << "\n";
        return kExitOk;
      }};
}

}  // namespace mugraph::tools
