#include "dataset/external_member.h"

#include <filesystem>

#include "codegen/kernel_abi.h"
#include "dataset/dataset_index.h"
#include "dataset/dataset_layout.h"
#include "dataset/dataset_rows.h"
#include "dataset/sha256.h"
#include "graph/error.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "graph/json_reader.h"
#include "runtime/manifest_reader.h"

namespace mugraph::dataset {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// How many parameters the PTX declares for `entry`, or -1 when it has no such entry.
int ptxParameterCount(const std::string& ptx, const std::string& entry) {
  size_t at = 0;
  while ((at = ptx.find(".entry " + entry, at)) != std::string::npos) {
    const size_t after = at + 7 + entry.size();
    at = after;
    if (after < ptx.size() && (std::isalnum(static_cast<unsigned char>(ptx[after])) ||
                               ptx[after] == '_' || ptx[after] == '$')) {
      continue;  // a longer name that starts with this one
    }
    const size_t open = ptx.find('(', after);
    const size_t body = ptx.find('{', after);
    if (open == std::string::npos || (body != std::string::npos && body < open)) return 0;
    const size_t close = ptx.find(')', open);
    int count = 0;
    for (size_t p = ptx.find(".param", open); p != std::string::npos && p < close;
         p = ptx.find(".param", p + 6)) {
      ++count;
    }
    return count;
  }
  return -1;
}

void checkTensor(const runtime::Manifest& manifest, const graph::TensorDesc& desc,
                 const std::string& role, std::vector<std::string>& problems) {
  for (const runtime::ManifestTensor& t : manifest.tensors) {
    if (t.name != desc.name) continue;
    if (t.role != role || t.dtype != desc.dtype || t.shape != desc.shape ||
        t.layout != desc.layout) {
      problems.push_back("manifest.json: tensor '" + desc.name + "' is not the program's " + role +
                         " (role, dtype, shape or layout differ)");
    }
    return;
  }
  problems.push_back("manifest.json: the program's " + role + " '" + desc.name +
                     "' is not bound to any tensor");
}

}  // namespace

std::vector<std::string> externalAbiProblems(const std::string& folder,
                                             const graph::Program& program) {
  std::vector<std::string> problems;
  runtime::Manifest manifest;
  try {
    manifest = runtime::readManifest(folder + "/manifest.json");
  } catch (const UserError& e) {
    return {e.what()};
  }
  for (graph::TensorId t : program.inputs)
    checkTensor(manifest, program.tensors[t], "input", problems);
  for (graph::TensorId t : program.outputs) {
    checkTensor(manifest, program.tensors[t], "output", problems);
  }
  const size_t bound = program.inputs.size() + program.outputs.size();
  size_t manifestBound = 0;
  for (const runtime::ManifestTensor& t : manifest.tensors) manifestBound += t.role != "workspace";
  if (manifestBound != bound) {
    problems.push_back("manifest.json: binds " + std::to_string(manifestBound) +
                       " inputs and outputs; the program has " + std::to_string(bound));
  }
  if (manifest.kernels.empty()) problems.push_back("manifest.json: lists no kernel");
  for (const auto& [arch, file] : manifest.ptx) {
    if (!isPathInsideDataset(file) || !fs::is_regular_file(folder + "/" + file)) {
      problems.push_back("manifest.json: PTX " + file + " for " + arch + " is missing");
      continue;
    }
    const std::string ptx = graph::readFileText(folder + "/" + file);
    for (const runtime::ManifestKernel& k : manifest.kernels) {
      const int declared = ptxParameterCount(ptx, k.entry);
      const int listed = static_cast<int>(k.params.size() + k.tensorMaps.size());
      if (declared < 0) {
        problems.push_back(file + ": has no entry " + k.entry);
      } else if (declared != listed) {
        problems.push_back(file + ": entry " + k.entry + " takes " + std::to_string(declared) +
                           " parameters; manifest.json lists " + std::to_string(listed));
      }
    }
  }
  if (manifest.ptx.empty()) problems.push_back("manifest.json: lists no PTX");
  return problems;
}

json readMemberSource(const std::string& folder) {
  const std::string path = folder + "/" + kMemberFile;
  const json member = graph::parseJsonText(graph::readFileText(path), path);
  if (!member.is_object() || member.value("format", "") != kMemberFormat ||
      member.value("version", 0) != 1) {
    throw UserError(path, "not a mugraph.external_member version 1");
  }
  if (!member.contains("source") || !member.at("source").is_object()) {
    throw UserError(path + ": $.source", "missing");
  }
  const json& source = member.at("source");
  for (const char* field : {"compiler", "version", "language", "file", "command"}) {
    if (!source.contains(field) || !source.at(field).is_string() ||
        source.at(field).get<std::string>().empty()) {
      throw UserError(path + ": $.source." + field, "missing or not a non-empty string");
    }
  }
  const std::string compiler = source.at("compiler").get<std::string>();
  if (compiler != codegen::sanitizeIdentifier(compiler)) {
    throw UserError(path + ": $.source.compiler", "use letters, digits and '_' only");
  }
  if (!isPathInsideDataset(source.at("file").get<std::string>()) ||
      !fs::is_regular_file(folder + "/" + source.at("file").get<std::string>())) {
    throw UserError(path + ": $.source.file", "names no file of the member's folder");
  }
  return source;
}

std::string addExternalMember(const std::string& datasetDir, const std::string& folder) {
  const json source = readMemberSource(folder);
  const graph::Program program = graph::loadProgram(folder + "/" + kMemberProgramFile);
  const std::vector<std::string> problems = externalAbiProblems(folder, program);
  if (!problems.empty()) throw UserError(folder, "incomplete launch ABI: " + problems.front());
  const runtime::Manifest manifest = runtime::readManifest(folder + "/manifest.json");
  const json manifestJson =
      graph::parseJsonText(graph::readFileText(folder + "/manifest.json"), folder);
  const std::string firstPtx = folder + "/" + manifest.ptx.begin()->second;
  const std::string cls = classId(program);
  const std::string variant =
      source.at("compiler").get<std::string>() + "-" + sha256OfFile(firstPtx).substr(0, 16);
  const std::string key = cls + "/" + variant;
  const std::string target = datasetDir + "/" + key;
  const std::string staging = datasetDir + "/" + cls + "/.staging-" + variant;
  fs::remove_all(staging);
  fs::create_directories(staging);
  json files = json::object();
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    fs::copy_file(entry.path(), staging + "/" + name);
    files[name] = {{"path", key + "/" + name}, {"sha256", sha256OfFile(staging + "/" + name)}};
  }
  json row = {{"format", kRowFormat},
              {"class", cls},
              {"variant", variant},
              {"program", program.name},
              {"program_hash", graph::hashHex(graph::programHash(program))},
              {"member", "external"},
              {"source", source},
              {"archs", json::array()},
              {"files", files},
              {"kernels", manifestJson.at("kernels")},
              {"workspace_bytes", manifest.workspaceBytes},
              {"verification", {{"level", kEvidenceGpu}, {"status", kStatusUnchecked}}}};
  for (const auto& [arch, file] : manifest.ptx) row["archs"].push_back(arch);
  std::map<std::string, json> rows =
      readManifestRows(datasetDir + "/" + kManifestFile, /*strict=*/false);
  fs::remove_all(target);
  fs::rename(staging, target);
  rows[key] = row;
  writeDatasetIndex(datasetDir, rows);
  return key;
}

}  // namespace mugraph::dataset
