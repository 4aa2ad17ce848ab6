// Reading a dataset's files back: the manifest rows (the builder reads them to skip what a
// previous run finished, `mugraph dataset check` to find anything missing or inconsistent)
// and classes.json.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace mugraph::dataset {

// Rows by "<class>/<variant>". Not strict: unreadable rows are dropped (they are redone).
// Strict: a UserError names the line of the first unreadable row.
std::map<std::string, nlohmann::json> readManifestRows(const std::string& path, bool strict);

// Whether a path a row records stays inside the dataset folder: relative, no ".." part. A
// row is data: it never makes a reader open a file outside the dataset.
bool isPathInsideDataset(const std::string& path);

// Whether every file the row lists exists under `outDir` with the recorded SHA-256.
bool rowFilesIntact(const std::string& outDir, const nlohmann::json& row);

// What classes.json says: every member as "<class>/<variant>", and whether it carries the
// equivalence statement. UserError naming the file and JSON path of anything malformed.
struct ClassesFile {
  std::set<std::string> members;
  std::set<std::string> excluded;  // external members that failed on the GPU
  bool statesEquivalence = false;
};
ClassesFile readClassesFile(const std::string& path);

}  // namespace mugraph::dataset
