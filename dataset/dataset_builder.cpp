#include "dataset/dataset_builder.h"

#include <cuda.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "codegen/generate.h"
#include "codegen/manifest.h"
#include "dataset/dataset_index.h"
#include "dataset/dataset_layout.h"
#include "dataset/dataset_rows.h"
#include "dataset/sha256.h"
#include "graph/error.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "plan/lower_predefined_ops.h"
#include "runtime/cuda_driver.h"
#include "runtime/gpu_check.h"
#include "runtime/gpu_check_json.h"
#include "verify/equivalence.h"
#include "verify/equivalence_json.h"

namespace mugraph::dataset {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The verification seed of a variant: fixed by its hash, so a rerun writes the same row.
uint64_t verificationSeed(const graph::Schedule& schedule) {
  return graph::scheduleHash(schedule) ^ 0x6d75677261706821ULL;
}

json filesJson(const std::string& variantDir, const std::string& relativeDir,
               const std::vector<std::string>& names) {
  json files = json::object();
  for (const std::string& name : names) {
    files[name] = {{"path", relativeDir + "/" + name},
                   {"sha256", sha256OfFile(variantDir + "/" + name)}};
  }
  return files;
}

class Builder {
 public:
  explicit Builder(const DatasetOptions& options) : options_(options) {
    fs::create_directories(options_.outDir);
    rows_ = readManifestRows(options_.outDir + "/" + kManifestFile, /*strict=*/false);
    if (options_.runOnGpu) {
      std::string whyNot;
      driver_ = options_.chooseGpu ? runtime::CudaDriver::open(whyNot, options_.chooseGpu)
                                   : runtime::CudaDriver::open(whyNot);
      if (!driver_) throw UserError("--run", "cannot run on a GPU: " + whyNot);
    }
  }

  // A variant is the schedule as emitted: predefined ops lowered to their default block
  // graphs, so its id, its schedule.json and its code describe the same thing.
  void addVariant(const graph::Program& program, const graph::Schedule& given,
                  DatasetSummary& summary) {
    const graph::Schedule schedule = plan::lowerPredefinedOps(
        given, plan::targetByName(codegen::archName(options_.archs.front())));
    const std::string cls = classId(program);
    const std::string variant = graph::variantName(schedule);
    const std::string key = cls + "/" + variant;
    const std::string dir = options_.outDir + "/" + key;
    ++summary.variants;
    auto existing = rows_.find(key);
    if (options_.alreadyPresent.count(key) ||
        (existing != rows_.end() && rowFilesIntact(options_.outDir, existing->second))) {
      ++summary.skipped;
      say("skip " + key + " (already in the dataset)");
      return;
    }
    say("verify " + key);
    verify::EquivalenceOptions verifyOptions;
    verifyOptions.seed = verificationSeed(schedule);
    const verify::EquivalenceReport report =
        verify::checkEquivalence(program, schedule.graph, verifyOptions);
    if (!report.equivalent) {
      ++summary.rejected;
      say("reject " + key + ": " + report.mismatch);
      return;
    }
    say("generate " + key);
    codegen::GenerateOptions generateOptions;
    generateOptions.archs = options_.archs;
    codegen::GeneratedCode code;
    try {
      code = codegen::generateCode(schedule, generateOptions);
    } catch (const std::exception& e) {
      // A schedule that verifies but cannot be emitted (too much shared memory for the
      // kernel as generated, say) is left out of the dataset, with the reason.
      ++summary.rejected;
      say("reject " + key + ": no code: " + e.what());
      return;
    }
    const std::string staging = options_.outDir + "/" + cls + "/.staging-" + variant;
    fs::remove_all(staging);
    const std::vector<std::string> files = codegen::writeGeneratedCode(code, staging);
    json row = {{"format", kRowFormat},
                {"class", cls},
                {"variant", variant},
                {"program", program.name},
                {"program_hash", graph::hashHex(graph::programHash(program))},
                {"schedule_hash", graph::hashHex(graph::scheduleHash(schedule))},
                {"archs", json::array()},
                {"files", filesJson(staging, key, files)},
                {"verification", verify::equivalenceReportJson(report)},
                {"cuda", {{"toolkit_version", CUDA_VERSION}}}};
    for (int arch : options_.archs) row["archs"].push_back(codegen::archName(arch));
    const json manifest = codegen::manifestJson(code);
    row["kernels"] = manifest.at("kernels");
    row["workspace_bytes"] = manifest.at("workspace_bytes");
    row["resources"] = manifest.at("resources");  // {"<cubin arch>": [per kernel]}
    row["nvrtc"] = manifest.at("nvrtc");
    if (driver_) {
      say("run " + key + " on " + driver_->deviceName());
      row["gpu"] = runtime::gpuCheckReportJson(runtime::checkOnGpu(
          *driver_, code.schedule, staging, verificationSeed(schedule), options_.gpuRepetitions));
    }
    fs::remove_all(dir);
    fs::create_directories(fs::path(dir).parent_path());
    fs::rename(staging, dir);
    rows_[key] = row;
    writeManifestAndClasses();
    ++summary.written;
    say("wrote " + key);
  }

 private:
  void writeManifestAndClasses() { writeDatasetIndex(options_.outDir, rows_); }

  void say(const std::string& line) const {
    if (options_.progress) options_.progress(line);
  }

  const DatasetOptions& options_;
  std::map<std::string, json> rows_;  // "<class>/<variant>" -> row, sorted
  std::unique_ptr<runtime::CudaDriver> driver_;
};

}  // namespace

DatasetSummary buildDataset(const std::vector<DatasetClassInput>& classes,
                            const DatasetOptions& options) {
  Builder builder(options);
  DatasetSummary summary;
  for (const DatasetClassInput& cls : classes) {
    ++summary.classes;
    for (const graph::Schedule& schedule : cls.schedules) {
      builder.addVariant(cls.program, schedule, summary);
    }
  }
  return summary;
}

}  // namespace mugraph::dataset
