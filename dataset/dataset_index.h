// The two index files of a dataset, written from its manifest rows in one place: the builder,
// `dataset add` (external members) and `dataset check --run --record` all rewrite them here,
// so classes.json always says the same thing about a row.
//
//   manifest.jsonl  every row, sorted by class then variant
//   classes.json    per class its members, and the external members kept out because they
//                   failed on the GPU ("excluded", each with the reason)
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace mugraph::dataset {

// Whether a row is an external member that failed its GPU check (kept out of its class).
bool rowExcluded(const nlohmann::json& row);

// Rewrites DIR/manifest.jsonl and DIR/classes.json atomically. `rows` by "<class>/<variant>".
void writeDatasetIndex(const std::string& outDir,
                       const std::map<std::string, nlohmann::json>& rows);

}  // namespace mugraph::dataset
