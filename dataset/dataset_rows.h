// Reading dataset manifest rows back: the builder reads them to skip what a previous run
// finished, `mugraph dataset check` to find anything missing or inconsistent.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace mugraph::dataset {

// Rows by "<class>/<variant>". Not strict: unreadable rows are dropped (they are redone).
// Strict: a UserError names the line of the first unreadable row.
std::map<std::string, nlohmann::json> readManifestRows(const std::string& path, bool strict);

// Whether every file the row lists exists under `outDir` with the recorded SHA-256.
bool rowFilesIntact(const std::string& outDir, const nlohmann::json& row);

}  // namespace mugraph::dataset
