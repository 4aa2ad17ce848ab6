// mugraph: the command-line entry point. Parses flags with CLI11, runs one subcommand, and
// turns every user error into one line on stderr with exit code 2 (never a crash). A message
// is printed with its non-printable bytes escaped.
#include <iostream>
#include <string>
#include <vector>

#include "distributed/ranks.h"
#include "graph/display_text.h"
#include "graph/error.h"
#include "graph/json_format.h"
#include "graph/version.h"
#include "tools/commands.h"

namespace {

int run(int argc, char** argv) {
  using namespace mugraph::tools;
  CLI::App app{
      "mugraph: a superoptimizer for GPU attention and GEMM kernels.\n"
      "Exit codes: 0 ok, 1 check failed (not equivalent), 2 bad input or usage, 3 internal "
      "error.",
      "mugraph"};
  app.set_version_flag("--version", std::string("mugraph ") + mugraph::graph::kVersion +
                                        " (schedule format version " +
                                        std::to_string(mugraph::graph::kFormatVersion) + ")");
  app.require_subcommand(1);
  const std::vector<Command> commands = {addShowCommand(app),     addCheckCommand(app),
                                         addVerifyCommand(app),   addSuperoptimizeCommand(app),
                                         addReplayCommand(app),   addDatasetCommand(app),
                                         addCalibrateCommand(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }
  for (const Command& command : commands) {
    if (command.subcommand->parsed()) return command.action();
  }
  return kExitBadInput;
}

// One write per line, so the lines of several ranks failing at once do not interleave; a rank
// other than 0 names itself (its host may be the one without a GPU, say).
void sayError(const std::string& kind, const std::string& message) {
  const int rank = mugraph::distributed::rankInJob();
  std::cerr << ("mugraph: " + (rank > 0 ? "rank " + std::to_string(rank) + ": " : std::string()) +
                kind + message + "\n");
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun every rank runs the same command; an error on one ends them all, as the
  // others would wait for it forever.
  mugraph::distributed::Session ranks(argc, argv);
  try {
    return run(argc, argv);
  } catch (const mugraph::UserError& e) {
    // A message may quote bytes of a corrupted input: they are printed escaped.
    sayError("error: ", mugraph::graph::escapeForDisplay(e.what()));
    mugraph::distributed::abortAll(mugraph::tools::kExitBadInput);
    return mugraph::tools::kExitBadInput;
  } catch (const std::exception& e) {
    sayError("internal error: ", mugraph::graph::escapeForDisplay(e.what()));
    mugraph::distributed::abortAll(mugraph::tools::kExitInternalError);
    return mugraph::tools::kExitInternalError;
  }
}
