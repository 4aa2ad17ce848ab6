#include "tools/print_model_run.h"

#include <iostream>

#include "tools/commands.h"

namespace mugraph::tools {

int printModelRun(const driver::ModelRun& run, bool json) {
  const nlohmann::json& summary = run.summary;
  if (json) {
    std::cout << summary.dump() << "\n";
  } else {
    std::cout << summary["subgraphs"].size() << " subgraph(s), " << summary["unsupported"].size()
              << " node(s) left to the framework\n";
    for (const nlohmann::json& s : summary["subgraphs"]) {
      std::cout << "  " << s["name"].get<std::string>() << ": " << s["ops"].size() << " nodes, "
                << s["verified"] << " verified"
                << (s["best"].is_null() ? "" : ", best " + s["best"]["name"].get<std::string>())
                << (s.contains("no_variants") ? " (" + s["no_variants"].get<std::string>() + ")"
                                              : "")
                << "\n";
    }
    for (const nlohmann::json& left : summary["unsupported"]) {
      std::cout << "  left out: " << left["node"].get<std::string>() << " ("
                << left["op"].get<std::string>() << "): " << left["reason"].get<std::string>()
                << "\n";
    }
  }
  return modelExitCode(run);
}

int modelExitCode(const driver::ModelRun& run) {
  if (run.internalErrors > 0) return kExitInternalError;
  return run.subgraphsWithoutVariants > 0 ? kExitCheckFailed : kExitOk;
}

}  // namespace mugraph::tools
