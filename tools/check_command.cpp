// `mugraph check SCHEDULE [--dim s=N]...`: validates a schedule and checks it against its own
// program (float tests in double, then finite-field fingerprints with a stated bound); a
// dynamic schedule at the given lengths, or over its range (verify/range_check.h).
#include <iostream>

#include "graph/files.h"
#include "graph/hash.h"
#include "tools/commands.h"
#include "tools/dim_flags.h"
#include "tools/equivalence_report.h"
#include "verify/equivalence_json.h"

namespace mugraph::tools {

Command addCheckCommand(CLI::App& app) {
  struct Options {
    std::string file;
    std::vector<std::string> dims;
    VerifyFlags flags;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "check",
      "Validate a schedule and check it against its own program: float tests in double at "
      "several input scales, then finite-field fingerprints. A dynamic schedule is checked at "
      "the --dim lengths, or without --dim over its range: at lengths covering each structural "
      "case of its cuts (verify/README.md, 'Dynamic dims'). Exit 0 equivalent, 1 not, 2 bad "
      "input.");
  sub->add_option("SCHEDULE", options->file, "schedule JSON file")->required();
  addVerifyFlags(*sub, options->flags);
  addDimFlag(*sub, options->dims, "check the schedule instantiated at that length");
  return {sub, [options]() {
            const graph::Schedule schedule = graph::loadSchedule(options->file);
            const verify::EquivalenceOptions verifyOptions = optionsFromFlags(options->flags);
            const std::string title = "schedule " + schedule.name + " (valid) vs its program";
            if (!schedule.program.dims.empty() && options->dims.empty()) {
              const verify::RangeReport range = verify::checkOverRange(schedule, verifyOptions);
              if (options->flags.json) {
                nlohmann::json out = verify::rangeReportJson(range);
                out["schedule"] = schedule.name;
                out["hash"] = graph::hashHex(graph::scheduleHash(schedule));
                std::cout << out.dump() << "\n";
              } else {
                std::cout << rangeReportToText(title + " over its range", range);
              }
              return range.equivalent ? kExitOk : kExitCheckFailed;
            }
            const graph::DimValues values = dimValuesFromFlags(options->dims);
            const verify::EquivalenceReport report =
                values.empty() && schedule.program.dims.empty()
                    ? verify::checkEquivalence(schedule.program, schedule.graph, verifyOptions)
                    : verify::checkAtLength(schedule, values, verifyOptions);
            if (options->flags.json) {
              nlohmann::json out = verify::equivalenceReportJson(report);
              out["valid"] = report.equivalent;
              out["schedule"] = schedule.name;
              out["hash"] = graph::hashHex(graph::scheduleHash(schedule));
              if (!values.empty()) out["dims"] = values;
              std::cout << out.dump() << "\n";
            } else {
              const std::string at = values.empty() ? "" : " at " + graph::dimValuesText(values);
              std::cout << reportToText(title + at, report);
            }
            return report.equivalent ? kExitOk : kExitCheckFailed;
          }};
}

}  // namespace mugraph::tools
