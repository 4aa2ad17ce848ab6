// The --dim NAME=LENGTH flag of `check` and `replay` (issue 28: dynamic dims), and how `check`
// prints a verdict over a dynamic schedule's range.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/dynamic_dims.h"
#include "verify/range_check.h"

namespace mugraph::tools {

// Adds a repeatable --dim option; `help` says what the command does with it.
void addDimFlag(CLI::App& command, std::vector<std::string>& dims, const std::string& help);
// The values of the --dim flags (UserError on a malformed or repeated one).
graph::DimValues dimValuesFromFlags(const std::vector<std::string>& dims);

std::string rangeReportToText(const std::string& title, const verify::RangeReport& report);

}  // namespace mugraph::tools
