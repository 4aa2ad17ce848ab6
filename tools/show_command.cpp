// `mugraph show FILE [--dot]`: a readable summary of a program or schedule.
#include <iostream>

#include "graph/files.h"
#include "tools/commands.h"
#include "tools/describe.h"

namespace mugraph::tools {

Command addShowCommand(CLI::App& app) {
  struct Options {
    std::string file;
    bool dot = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "show",
      "Summarize a program (.mg or JSON) or schedule (JSON): kernels, grids, tiles, "
      "shared-memory bytes, hashes.");
  sub->add_option("FILE", options->file, "program or schedule file")->required();
  sub->add_flag("--dot", options->dot, "print a Graphviz digraph instead of the summary");
  return {sub, [options]() {
            const graph::LoadedFile loaded = graph::loadFile(options->file);
            if (loaded.schedule) {
              std::cout << (options->dot ? scheduleToDot(*loaded.schedule)
                                         : describeSchedule(*loaded.schedule));
            } else {
              std::cout << (options->dot ? programToDot(loaded.program)
                                         : describeProgram(loaded.program));
            }
            return kExitOk;
          }};
}

}  // namespace mugraph::tools
