// How `mugraph check` and `mugraph verify` print an equivalence verdict: one readable block,
// or (with --json) verify::equivalenceReportJson, the report's one JSON schema.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "verify/equivalence.h"

namespace mugraph::tools {

struct VerifyFlags {
  std::optional<int> trials;
  std::optional<uint64_t> seed;
  bool json = false;
  bool fullSize = false;
};

void addVerifyFlags(CLI::App& command, VerifyFlags& flags);
verify::EquivalenceOptions optionsFromFlags(const VerifyFlags& flags);

std::string reportToText(const std::string& title, const verify::EquivalenceReport& report);

}  // namespace mugraph::tools
