#include "dataset/external_row_check.h"

#include "dataset/dataset_layout.h"
#include "dataset/external_member.h"
#include "graph/error.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "graph/json_reader.h"

namespace mugraph::dataset {
namespace {

using nlohmann::json;

void checkEvidence(const json& verification, const std::string& where,
                   std::vector<std::string>& problems) {
  if (verification.value("level", "") != kEvidenceGpu) {
    problems.push_back(where + ": an external member's evidence must be level " +
                       std::string(kEvidenceGpu) + ", not '" + verification.value("level", "") +
                       "'");
  }
  const std::string status = verification.value("status", "");
  if (status == kStatusUnchecked) {
    if (verification.value("equivalent", false)) {
      problems.push_back(where + ": claims equivalent but was never run on a GPU");
    }
    return;
  }
  if (status == kStatusFailed) {
    if (!verification.contains("reason")) problems.push_back(where + ": failed without a reason");
    return;
  }
  if (status != kStatusPassed) {
    problems.push_back(where + ": status '" + status + "' is not unchecked, passed or failed");
    return;
  }
  const json trials = verification.value("trials", json::array());
  if (!trials.is_array() || trials.empty()) {
    problems.push_back(where + ": passed without recorded trials");
    return;
  }
  const double tolerance = verification.value("tolerance", -1.0);
  const json worst = verification.value("worst_error", json());
  if (!worst.is_number() || tolerance <= 0 || worst.get<double>() > tolerance) {
    problems.push_back(where + ": passed, but its worst error is not within its tolerance");
  }
  for (const json& trial : trials) {
    if (!trial.is_object() || !trial.value("matches", false)) {
      problems.push_back(where + ": passed, but a recorded trial did not match");
      return;
    }
  }
}

}  // namespace

bool isExternalRow(const json& row) {
  return row.is_object() && row.value("member", "") == "external";
}

std::optional<graph::Program> checkExternalRow(const std::string& dir, const std::string& key,
                                               const json& row,
                                               std::vector<std::string>& problems) {
  const std::string where = std::string(kManifestFile) + " row " + key;
  for (const char* field :
       {"program_hash", "source", "files", "kernels", "verification", "archs", "workspace_bytes"}) {
    if (!row.contains(field)) problems.push_back(where + ": missing field '" + field + "'");
  }
  const std::string folder = dir + "/" + key;
  json source;
  try {
    source = readMemberSource(folder);
  } catch (const UserError& e) {
    problems.push_back(where + ": " + e.what());
  }
  if (row.contains("source") && !source.is_null() && row.at("source") != source) {
    problems.push_back(where + ": its source differs from the member's member.json");
  }
  const std::string compiler = source.is_object() ? source.value("compiler", "") : "";
  if (!compiler.empty() && row.value("variant", "").rfind(compiler + "-", 0) != 0) {
    problems.push_back(where + ": the variant id does not name its compiler " + compiler);
  }
  checkEvidence(row.value("verification", json::object()), where, problems);

  std::optional<graph::Program> program;
  try {
    program = graph::loadProgram(folder + "/" + kMemberProgramFile);
  } catch (const UserError& e) {
    problems.push_back(where + ": program does not load: " + e.what());
    return std::nullopt;
  }
  if (classId(*program) != row.value("class", "")) {
    problems.push_back(where + ": its program is not the class's program (mislabeled)");
    program.reset();
  } else if (graph::hashHex(graph::programHash(*program)) != row.value("program_hash", "")) {
    problems.push_back(where + ": program_hash does not match its program");
  }
  if (program) {
    for (const std::string& p : externalAbiProblems(folder, *program)) {
      problems.push_back(where + ": " + p);
    }
  }
  try {
    const json manifest = graph::parseJsonText(graph::readFileText(folder + "/manifest.json"),
                                               folder + "/manifest.json");
    if (!manifest.is_object() ||
        row.value("kernels", json()) != manifest.value("kernels", json())) {
      problems.push_back(where + ": the row's kernels are not manifest.json's");
    }
    if (manifest.is_object() &&
        row.value("workspace_bytes", json()) != manifest.value("workspace_bytes", json())) {
      problems.push_back(where + ": workspace_bytes differs from manifest.json's");
    }
  } catch (const UserError&) {
    // externalAbiProblems has reported the unreadable manifest.
  }
  return program;
}

}  // namespace mugraph::dataset
