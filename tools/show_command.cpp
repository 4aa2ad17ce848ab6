// `mugraph show FILE [--dot]`: a readable summary of a program or schedule.
#include <iostream>

#include "dataset/pytorch_program.h"
#include "graph/files.h"
#include "tools/commands.h"
#include "tools/describe.h"

namespace mugraph::tools {

Command addShowCommand(CLI::App& app) {
  struct Options {
    std::string file;
    bool dot = false;
    bool pytorch = false;
    std::string arch = plan::kDefaultTarget;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "show",
      "Summarize a program (.mg or JSON) or schedule (JSON): kernels, grids, tiles, "
      "shared-memory bytes and pipeline stages as planned for --arch, hashes.");
  sub->add_option("FILE", options->file, "program or schedule file")->required();
  sub->add_flag("--dot", options->dot, "print a Graphviz digraph instead of the summary");
  sub->add_flag("--pytorch", options->pytorch,
                "print the program as a PyTorch module computing in the dtype its inputs arrive "
                "in (inputs in storage layout, as a kernel takes them) instead of the summary");
  sub->add_option("--arch", options->arch, "target whose plan is shown (sm_80 or sm_90)")
      ->capture_default_str();
  return {sub, [options]() {
            const plan::Target& target = plan::targetByName(options->arch);
            const graph::LoadedFile loaded = graph::loadFile(options->file);
            if (options->pytorch) {
              std::cout << dataset::pytorchProgram(loaded.program, /*native=*/true);
              return kExitOk;
            }
            if (loaded.schedule) {
              std::cout << (options->dot ? scheduleToDot(*loaded.schedule)
                                         : describeSchedule(*loaded.schedule, target));
            } else {
              std::cout << (options->dot ? programToDot(loaded.program)
                                         : describeProgram(loaded.program, target));
            }
            return kExitOk;
          }};
}

}  // namespace mugraph::tools
