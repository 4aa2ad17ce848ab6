// What `mugraph dataset check` verifies of an external member's row (external_member.h),
// beyond the digests of its files: that the row says where the kernel came from, that its
// program is the class's, that its launch ABI is complete, that the row's kernels are the
// manifest's, and that its evidence is honest: gpu-random-test, never finite-field, and a
// passed status only with the trials, tolerance and worst error that justify it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace mugraph::dataset {

bool isExternalRow(const nlohmann::json& row);

// Appends one line per problem (`where` first); returns the member's program when it loads
// and is the class's.
std::optional<graph::Program> checkExternalRow(const std::string& dir, const std::string& key,
                                               const nlohmann::json& row,
                                               std::vector<std::string>& problems);

}  // namespace mugraph::dataset
