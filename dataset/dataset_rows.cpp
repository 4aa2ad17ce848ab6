#include "dataset/dataset_rows.h"

#include <filesystem>
#include <fstream>

#include "dataset/dataset_layout.h"
#include "dataset/sha256.h"
#include "graph/error.h"

namespace mugraph::dataset {

std::map<std::string, nlohmann::json> readManifestRows(const std::string& path, bool strict) {
  std::map<std::string, nlohmann::json> rows;
  std::ifstream in(path);
  if (!in) {
    if (strict) throw UserError(path, "cannot be read");
    return rows;
  }
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = path + ":" + std::to_string(number);
    try {
      nlohmann::json row = nlohmann::json::parse(line);
      if (!row.is_object() || row.value("format", "") != kRowFormat || !row.contains("class") ||
          !row.contains("variant") || !row.at("class").is_string() ||
          !row.at("variant").is_string()) {
        throw UserError(where, "not a dataset row (format, class and variant are required)");
      }
      const std::string key =
          row.at("class").get<std::string>() + "/" + row.at("variant").get<std::string>();
      rows[key] = std::move(row);
    } catch (const nlohmann::json::exception& e) {
      if (strict) throw UserError(where, std::string("not valid JSON: ") + e.what());
    } catch (const UserError&) {
      if (strict) throw;
    }
  }
  return rows;
}

bool rowFilesIntact(const std::string& outDir, const nlohmann::json& row) {
  if (!row.contains("files") || !row.at("files").is_object()) return false;
  for (const auto& [name, file] : row.at("files").items()) {
    if (!file.is_object() || !file.contains("path") || !file.contains("sha256")) return false;
    const std::string path = outDir + "/" + file.at("path").get<std::string>();
    if (!std::filesystem::is_regular_file(path)) return false;
    try {
      if (sha256OfFile(path) != file.at("sha256").get<std::string>()) return false;
    } catch (const UserError&) {
      return false;
    }
  }
  return true;
}

}  // namespace mugraph::dataset
