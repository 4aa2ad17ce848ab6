#include "dataset/dataset_check.h"

#include <filesystem>
#include <set>
#include <sstream>

#include "dataset/dataset_gpu_check.h"
#include "dataset/dataset_index.h"
#include "dataset/dataset_layout.h"
#include "dataset/dataset_rows.h"
#include "dataset/external_row_check.h"
#include "dataset/sha256.h"
#include "graph/error.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "runtime/cuda_driver.h"
#include "runtime/manifest_reader.h"

namespace mugraph::dataset {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class Checker {
 public:
  Checker(std::string dir, DatasetCheckReport& report) : dir_(std::move(dir)), report_(report) {}

  void problem(const std::string& where, const std::string& what) {
    report_.problems.push_back(where + ": " + what);
  }

  // Every file the row lists: inside the dataset, present, with its recorded digest.
  bool checkFiles(const std::string& key, const json& row) {
    const std::string where = std::string(kManifestFile) + " row " + key;
    if (!row.contains("files") || !row.at("files").is_object()) return false;
    for (const auto& [name, file] : row.at("files").items()) {
      if (!isPathInsideDataset(file.value("path", std::string()))) {
        problem(where, "file " + name + " has a path outside the dataset");
        continue;
      }
      const std::string path = dir_ + "/" + file.value("path", std::string());
      if (!fs::is_regular_file(path)) {
        problem(where, "file " + file.value("path", name) + " is missing");
        continue;
      }
      if (sha256OfFile(path) != file.value("sha256", std::string())) {
        problem(where, "file " + file.value("path", name) + " does not match its sha256");
      }
    }
    for (const std::string& arch : row.value("archs", std::vector<std::string>{})) {
      if (!row.at("files").contains(arch + ".ptx")) problem(where, "no PTX listed for " + arch);
    }
    return true;
  }

  // The member's program when its row is sound; a member with any problem is not launched
  // (an incomplete ABI could fault the GPU context the other members run in).
  std::optional<graph::Program> checkExternal(const std::string& key, const json& row) {
    const size_t before = report_.problems.size();
    checkFiles(key, row);
    std::vector<std::string> problems;
    std::optional<graph::Program> program = checkExternalRow(dir_, key, row, problems);
    for (const std::string& p : problems) report_.problems.push_back(p);
    ++report_.variantsChecked;
    ++report_.externalMembers;
    if (report_.problems.size() != before) return std::nullopt;
    return program;
  }

  // The row's own fields, its files and its schedule. Returns the schedule if it loads.
  std::optional<graph::Schedule> checkRow(const std::string& key, const json& row) {
    const std::string where = std::string(kManifestFile) + " row " + key;
    for (const char* field : {"program_hash", "schedule_hash", "files", "kernels", "verification",
                              "archs", "workspace_bytes", "nvrtc"}) {
      if (!row.contains(field)) problem(where, std::string("missing field '") + field + "'");
    }
    if (!checkFiles(key, row)) return std::nullopt;
    std::optional<graph::Schedule> schedule;
    try {
      schedule = graph::loadSchedule(dir_ + "/" + key + "/schedule.json");
    } catch (const UserError& e) {
      problem(where, std::string("schedule does not load: ") + e.what());
      return std::nullopt;
    }
    if (graph::variantName(*schedule) != row.value("variant", std::string())) {
      problem(where,
              "schedule hash " + graph::variantName(*schedule) + " does not match the variant id");
    }
    if (classId(schedule->program) != row.value("class", std::string())) {
      problem(where, "the schedule's program is not the class's program");
    }
    if (graph::hashHex(graph::programHash(schedule->program)) !=
        row.value("program_hash", std::string())) {
      problem(where, "program_hash does not match the schedule's program");
    }
    try {
      const runtime::Manifest manifest = runtime::readManifest(dir_ + "/" + key + "/manifest.json");
      if (row.contains("kernels") && row.at("kernels").size() != manifest.kernels.size()) {
        problem(where, "the row and manifest.json list different kernels");
      }
    } catch (const UserError& e) {
      problem(where, std::string("manifest.json: ") + e.what());
    }
    const json verification = row.value("verification", json::object());
    if (!verification.value("equivalent", false)) {
      problem(where, "its verification does not say equivalent");
    }
    ++report_.variantsChecked;
    return schedule;
  }

  void checkClasses(const std::map<std::string, json>& rows) {
    ClassesFile classes;
    try {
      classes = readClassesFile(dir_ + "/" + kClassesFile);
    } catch (const UserError& e) {
      problem(kClassesFile, std::string("cannot be read: ") + e.what());
      return;
    }
    for (const auto& [key, row] : rows) {
      if (rowExcluded(row)) {
        if (!classes.excluded.count(key))
          problem(kClassesFile, "does not list " + key + " as excluded");
        if (classes.members.count(key)) {
          problem(kClassesFile, "lists " + key + " as a member, but it failed on the GPU");
        }
      } else if (!classes.members.count(key)) {
        problem(kClassesFile, "does not list " + key);
      }
    }
    for (const std::string& key : classes.members) {
      if (!rows.count(key)) problem(kClassesFile, "lists " + key + ", which has no manifest row");
    }
    for (const std::string& key : classes.excluded) {
      if (!rows.count(key) || !rowExcluded(rows.at(key))) {
        problem(kClassesFile, "excludes " + key + ", whose row does not say it failed");
      }
    }
    if (!classes.statesEquivalence) problem(kClassesFile, "has no equivalence statement");
  }

  void checkOrphans(const std::map<std::string, json>& rows) {
    for (const auto& cls : fs::directory_iterator(dir_)) {
      if (!cls.is_directory()) continue;
      for (const auto& variant : fs::directory_iterator(cls.path())) {
        const std::string name = variant.path().filename().string();
        if (!variant.is_directory() || name.rfind(".staging-", 0) == 0) continue;
        const std::string key = cls.path().filename().string() + "/" + name;
        if (!rows.count(key)) problem(key, "folder has no manifest row");
      }
    }
  }

 private:
  std::string dir_;
  DatasetCheckReport& report_;
};

}  // namespace

DatasetCheckReport checkDataset(const std::string& dir, const DatasetCheckOptions& options) {
  if (!fs::is_directory(dir)) throw UserError(dir, "is not a dataset folder");
  DatasetCheckReport report;
  Checker checker(dir, report);
  std::map<std::string, json> rows;
  try {
    rows = readManifestRows(dir + "/" + kManifestFile, /*strict=*/true);
  } catch (const UserError& e) {
    checker.problem(kManifestFile, e.what());
    rows = readManifestRows(dir + "/" + kManifestFile, /*strict=*/false);
  }
  report.rows = static_cast<int>(rows.size());
  std::unique_ptr<runtime::CudaDriver> driver;
  if (options.runOnGpu) {
    std::string whyNot;
    driver = runtime::CudaDriver::open(whyNot);
    if (!driver) throw UserError("--run", "cannot run on a GPU: " + whyNot);
  }
  std::vector<GpuMember> members;
  for (const auto& [key, row] : rows) {
    try {
      if (isExternalRow(row)) {
        std::optional<graph::Program> program = checker.checkExternal(key, row);
        if (rowExcluded(row)) {
          ++report.excluded;
          report.gpuLines.push_back(
              key + ": kept out of its class: " + row.at("verification").value("reason", ""));
        } else if (program) {
          members.push_back(GpuMember{key, std::move(*program), true});
        }
      } else if (std::optional<graph::Schedule> schedule = checker.checkRow(key, row)) {
        members.push_back(GpuMember{key, schedule->program, false});
      }
    } catch (const nlohmann::json::exception& e) {
      // A row's fields of the wrong type (a corrupted manifest) are a problem, not a crash.
      checker.problem(std::string(kManifestFile) + " row " + key,
                      std::string("malformed: ") + e.what());
    }
  }
  if (driver) {
    DatasetGpuResult gpu = runDatasetOnGpu(*driver, dir, members, options.record, rows);
    report.gpuRuns = gpu.runs;
    for (std::string& line : gpu.lines) report.gpuLines.push_back(std::move(line));
    for (std::string& p : gpu.problems) report.problems.push_back(std::move(p));
    if (options.record) writeDatasetIndex(dir, rows);
  }
  checker.checkClasses(rows);
  checker.checkOrphans(rows);
  return report;
}

}  // namespace mugraph::dataset
