// `mugraph check SCHEDULE`: validates a schedule and checks it against its own program
// (float tests in double, then finite-field fingerprints with a stated bound).
#include <iostream>

#include "graph/files.h"
#include "graph/hash.h"
#include "tools/commands.h"
#include "tools/equivalence_report.h"
#include "verify/equivalence_json.h"

namespace mugraph::tools {

Command addCheckCommand(CLI::App& app) {
  struct Options {
    std::string file;
    VerifyFlags flags;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "check",
      "Validate a schedule and check it against its own program: float tests in double at "
      "several input scales, then finite-field fingerprints. Exit 0 equivalent, 1 not, 2 bad "
      "input.");
  sub->add_option("SCHEDULE", options->file, "schedule JSON file")->required();
  addVerifyFlags(*sub, options->flags);
  return {sub, [options]() {
            const graph::Schedule schedule = graph::loadSchedule(options->file);
            const verify::EquivalenceReport report = verify::checkEquivalence(
                schedule.program, schedule.graph, optionsFromFlags(options->flags));
            if (options->flags.json) {
              nlohmann::json out = verify::equivalenceReportJson(report);
              out["valid"] = report.equivalent;
              out["schedule"] = schedule.name;
              out["hash"] = graph::hashHex(graph::scheduleHash(schedule));
              std::cout << out.dump() << "\n";
            } else {
              std::cout << reportToText("schedule " + schedule.name + " (valid) vs its program",
                                        report);
            }
            return report.equivalent ? kExitOk : kExitCheckFailed;
          }};
}

}  // namespace mugraph::tools
