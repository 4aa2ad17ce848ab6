// `mugraph verify A B`: are two programs or schedules the same function? Each file is a
// program (.mg or JSON) or a schedule; a schedule is compared through its kernel graph.
#include <iostream>

#include "graph/files.h"
#include "tools/commands.h"
#include "tools/equivalence_report.h"
#include "verify/equivalence_json.h"

namespace mugraph::tools {

Command addVerifyCommand(CLI::App& app) {
  struct Options {
    std::string a, b;
    VerifyFlags flags;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "verify",
      "Check that B computes the same outputs as A (matched by name) on the same inputs. "
      "Exit 0 equivalent, 1 not, 2 bad input.");
  sub->add_option("A", options->a, "reference program or schedule")->required();
  sub->add_option("B", options->b, "candidate program or schedule")->required();
  addVerifyFlags(*sub, options->flags);
  return {sub, [options]() {
            auto graphOf = [](const graph::LoadedFile& f) {
              return f.schedule ? f.schedule->graph : f.program;
            };
            const graph::KernelGraph a = graphOf(graph::loadFile(options->a));
            const graph::KernelGraph b = graphOf(graph::loadFile(options->b));
            const verify::EquivalenceReport report =
                verify::checkEquivalence(a, b, optionsFromFlags(options->flags));
            if (options->flags.json) {
              std::cout << verify::equivalenceReportJson(report).dump() << "\n";
            } else {
              std::cout << reportToText(options->b + " vs " + options->a, report);
            }
            return report.equivalent ? kExitOk : kExitCheckFailed;
          }};
}

}  // namespace mugraph::tools
