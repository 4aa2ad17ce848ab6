// How `mugraph check` and `mugraph verify` print an equivalence verdict: one readable block,
// or one JSON object with the same fields.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "verify/equivalence.h"

namespace mugraph::tools {

struct VerifyFlags {
  std::optional<int> trials;
  std::optional<uint64_t> seed;
  bool json = false;
};

void addVerifyFlags(CLI::App& command, VerifyFlags& flags);
verify::EquivalenceOptions optionsFromFlags(const VerifyFlags& flags);

nlohmann::json reportToJson(const verify::EquivalenceReport& report);
std::string reportToText(const std::string& title, const verify::EquivalenceReport& report);

}  // namespace mugraph::tools
