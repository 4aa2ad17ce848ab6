#include "dataset/dataset_rows.h"

#include <filesystem>
#include <fstream>

#include "dataset/dataset_layout.h"
#include "dataset/sha256.h"
#include "graph/error.h"
#include "graph/files.h"
#include "graph/json_reader.h"

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

bool isPathInsideDataset(const std::string& path) {
  const std::filesystem::path p(path);
  if (path.empty() || p.is_absolute()) return false;
  for (const std::filesystem::path& part : p) {
    if (part == "..") return false;
  }
  return true;
}

bool rowFilesIntact(const std::string& outDir, const nlohmann::json& row) {
  if (!row.contains("files") || !row.at("files").is_object()) return false;
  for (const auto& [name, file] : row.at("files").items()) {
    if (!file.is_object() || !file.contains("path") || !file.contains("sha256") ||
        !file.at("path").is_string() || !file.at("sha256").is_string() ||
        !isPathInsideDataset(file.at("path").get<std::string>())) {
      return false;
    }
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

ClassesFile readClassesFile(const std::string& path) {
  const nlohmann::json document = graph::parseJsonText(graph::readFileText(path), path);
  if (!document.is_object()) throw UserError(path + ": $", "expected an object");
  ClassesFile file;
  file.statesEquivalence = document.contains("equivalence");
  if (!document.contains("classes")) return file;
  const nlohmann::json& classes = document.at("classes");
  if (!classes.is_array()) throw UserError(path + ": $.classes", "expected an array");
  for (size_t c = 0; c < classes.size(); ++c) {
    const std::string where = path + ": $.classes[" + std::to_string(c) + "]";
    const nlohmann::json& cls = classes[c];
    if (!cls.is_object() || !cls.contains("class") || !cls.at("class").is_string()) {
      throw UserError(where, "expected an object with a \"class\" name");
    }
    const nlohmann::json members = cls.value("members", nlohmann::json::array());
    if (!members.is_array()) throw UserError(where + ".members", "expected an array");
    for (size_t m = 0; m < members.size(); ++m) {
      if (!members[m].is_string()) {
        throw UserError(where + ".members[" + std::to_string(m) + "]", "expected a variant id");
      }
      file.members.insert(cls.at("class").get<std::string>() + "/" + members[m].get<std::string>());
    }
    const nlohmann::json excluded = cls.value("excluded", nlohmann::json::array());
    if (!excluded.is_array()) throw UserError(where + ".excluded", "expected an array");
    for (size_t e = 0; e < excluded.size(); ++e) {
      if (!excluded[e].is_object() || !excluded[e].contains("variant") ||
          !excluded[e].at("variant").is_string() || !excluded[e].contains("reason")) {
        throw UserError(where + ".excluded[" + std::to_string(e) + "]",
                        "expected {\"variant\", \"reason\"}");
      }
      file.excluded.insert(cls.at("class").get<std::string>() + "/" +
                           excluded[e].at("variant").get<std::string>());
    }
  }
  return file;
}

}  // namespace mugraph::dataset
