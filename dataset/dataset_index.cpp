#include "dataset/dataset_index.h"

#include "dataset/dataset_layout.h"
#include "graph/files.h"

namespace mugraph::dataset {

using nlohmann::json;

bool rowExcluded(const json& row) {
  if (!row.is_object() || !row.contains("verification")) return false;
  const json& verification = row.at("verification");
  return verification.is_object() && verification.value("status", "") == kStatusFailed;
}

void writeDatasetIndex(const std::string& outDir, const std::map<std::string, json>& rows) {
  std::string manifest;
  std::map<std::string, json> classes;
  for (const auto& [key, row] : rows) {
    manifest += row.dump() + "\n";
    json& cls = classes[row.at("class").get<std::string>()];
    if (cls.is_null()) {
      cls = {{"class", row.at("class")},
             {"program", row.at("program")},
             {"program_hash", row.at("program_hash")},
             {"members", json::array()},
             {"excluded", json::array()}};
    }
    if (rowExcluded(row)) {
      cls["excluded"].push_back(
          {{"variant", row.at("variant")},
           {"reason", row.at("verification").value("reason", "failed on the GPU")}});
    } else {
      cls["members"].push_back(row.at("variant"));
    }
  }
  graph::writeFileAtomic(outDir + "/" + kManifestFile, manifest);
  json document = {{"format", "mugraph.dataset.classes"},
                   {"version", 1},
                   {"equivalence", kEquivalenceStatement},
                   {"classes", json::array()}};
  for (auto& [id, cls] : classes) document["classes"].push_back(cls);
  graph::writeFileAtomic(outDir + "/" + kClassesFile, document.dump(2) + "\n");
}

}  // namespace mugraph::dataset
