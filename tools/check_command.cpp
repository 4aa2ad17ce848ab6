// `mugraph check SCHEDULE [--json]`: validates a schedule and compares it with its own
// program on fresh random inputs through the reference interpreter (in double).
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "graph/files.h"
#include "graph/hash.h"
#include "tools/commands.h"
#include "verify/interpreter.h"
#include "verify/random_inputs.h"

namespace mugraph::tools {

Command addCheckCommand(CLI::App& app) {
  struct Options {
    std::string file;
    bool json = false;
    std::optional<uint64_t> seed;
    double scale = 1.0;
    double tolerance = 1e-9;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "check",
      "Validate a schedule and compare it with its program on fresh random inputs (double). "
      "Exit 0 if the max relative error is within tolerance, 1 if not, 2 on bad input.");
  sub->add_option("SCHEDULE", options->file, "schedule JSON file")->required();
  sub->add_flag("--json", options->json, "print the result as one JSON object");
  sub->add_option("--seed", options->seed, "input seed (default: fresh; printed for replay)");
  sub->add_option("--scale", options->scale, "inputs are uniform in [-scale, scale]")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--tolerance", options->tolerance, "max relative error accepted")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  return {sub, [options]() {
            const graph::Schedule schedule = graph::loadSchedule(options->file);
            const uint64_t seed = options->seed ? *options->seed : std::random_device{}();
            const auto inputs = verify::randomInputs(schedule.program, seed, options->scale);
            const auto expected = verify::evaluate(schedule.program, inputs);
            const auto actual = verify::evaluate(schedule.graph, inputs);
            const double error = verify::maxRelativeError(expected, actual);
            const bool valid = error <= options->tolerance;
            if (options->json) {
              nlohmann::json out = {{"valid", valid},
                                    {"schedule", schedule.name},
                                    {"hash", graph::hashHex(graph::scheduleHash(schedule))},
                                    {"seed", seed},
                                    {"input_scale", options->scale},
                                    {"max_rel_error", error},
                                    {"tolerance", options->tolerance}};
              std::cout << out.dump() << "\n";
            } else {
              std::cout << schedule.name << ": " << (valid ? "valid" : "NOT EQUIVALENT")
                        << "  max relative error " << error << " (tolerance "
                        << options->tolerance << ", double, seed " << seed << ", inputs in ±"
                        << options->scale << ")\n";
            }
            return valid ? kExitOk : kExitCheckFailed;
          }};
}

}  // namespace mugraph::tools
