// The `mugraph` subcommands. Each registers itself on the CLI11 app and returns the
// process exit code: 0 ok, 1 a check failed (not equivalent, a GPU mismatch, or no verified
// variant), 2 bad input or usage, 3 internal error.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace mugraph::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternalError = 3;

// A subcommand and its body, run after parsing when that subcommand was chosen.
struct Command {
  CLI::App* subcommand;
  std::function<int()> action;
};

// --spread, for a command with a list of whole jobs (`items`: a model's subgraphs, a dataset's
// programs) under mpirun: distributed::chooseSpread reads it.
inline void addSpreadOption(CLI::App* sub, std::string& spread, const std::string& items) {
  sub->add_option("--spread", spread,
                  "under mpirun: items (each of the " + items +
                      " whole on one rank, dealt as ranks finish), searches (one after "
                      "another, each search over every rank) or auto (items when there are at "
                      "least as many as ranks)")
      ->capture_default_str();
}

Command addShowCommand(CLI::App& app);
Command addCheckCommand(CLI::App& app);
Command addVerifyCommand(CLI::App& app);
Command addSuperoptimizeCommand(CLI::App& app);
Command addReplayCommand(CLI::App& app);
Command addDatasetCommand(CLI::App& app);
Command addCalibrateCommand(CLI::App& app);

}  // namespace mugraph::tools
