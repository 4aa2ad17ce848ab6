#include "dataset/dataset_builder.h"

#include <cuda.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

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

  // One variant's work up to its install: verified, generated and written into a staging
  // folder with its manifest row. Independent of every other variant's (buildDataset runs them
  // on several threads); install then takes them in order.
  struct Prepared {
    enum class State { Skip, Reject, Ready } state = State::Skip;
    std::string key;
    std::string staging;
    graph::Schedule schedule;
    codegen::GeneratedCode code;
    json row;
  };

  // A variant is the schedule as emitted: predefined ops lowered to their default block
  // graphs, so its id, its schedule.json and its code describe the same thing.
  graph::Schedule emitted(const graph::Schedule& given) const {
    return plan::lowerPredefinedOps(given,
                                    plan::targetByName(codegen::archName(options_.archs.front())));
  }
  std::string keyOf(const graph::Program& program, const graph::Schedule& schedule) const {
    return classId(program) + "/" + graph::variantName(schedule);
  }

  bool present(const std::string& key) const {
    const auto existing = rows_.find(key);
    return options_.alreadyPresent.count(key) ||
           (existing != rows_.end() && rowFilesIntact(options_.outDir, existing->second));
  }

  Prepared prepare(const graph::Program& program, const graph::Schedule& given) const {
    Prepared p;
    p.schedule = emitted(given);
    p.key = keyOf(program, p.schedule);
    if (present(p.key)) return p;
    say("verify " + p.key);
    verify::EquivalenceOptions verifyOptions;
    verifyOptions.seed = verificationSeed(p.schedule);
    const verify::EquivalenceReport report =
        verify::checkEquivalence(program, p.schedule.graph, verifyOptions);
    if (!report.equivalent) {
      p.state = Prepared::State::Reject;
      say("reject " + p.key + ": " + report.mismatch);
      return p;
    }
    say("generate " + p.key);
    codegen::GenerateOptions generateOptions;
    generateOptions.archs = options_.archs;
    try {
      p.code = codegen::generateCode(p.schedule, generateOptions);
    } catch (const std::exception& e) {
      // A schedule that verifies but cannot be emitted (too much shared memory for the
      // kernel as generated, say) is left out of the dataset, with the reason.
      p.state = Prepared::State::Reject;
      say("reject " + p.key + ": no code: " + e.what());
      return p;
    }
    const std::string cls = classId(program);
    const std::string variant = graph::variantName(p.schedule);
    p.staging = options_.outDir + "/" + cls + "/.staging-" + variant;
    fs::remove_all(p.staging);
    const std::vector<std::string> files = codegen::writeGeneratedCode(p.code, p.staging);
    p.row = {{"format", kRowFormat},
             {"class", cls},
             {"variant", variant},
             {"program", program.name},
             {"program_hash", graph::hashHex(graph::programHash(program))},
             {"schedule_hash", graph::hashHex(graph::scheduleHash(p.schedule))},
             {"archs", json::array()},
             {"files", filesJson(p.staging, p.key, files)},
             {"verification", verify::equivalenceReportJson(report)},
             {"cuda", {{"toolkit_version", CUDA_VERSION}}}};
    for (int arch : options_.archs) p.row["archs"].push_back(codegen::archName(arch));
    const json manifest = codegen::manifestJson(p.code);
    p.row["kernels"] = manifest.at("kernels");
    p.row["workspace_bytes"] = manifest.at("workspace_bytes");
    p.row["resources"] = manifest.at("resources");  // {"<cubin arch>": [per kernel]}
    p.row["nvrtc"] = manifest.at("nvrtc");
    p.state = Prepared::State::Ready;
    return p;
  }

  // In the order of the class's schedules, on the calling thread (the GPU's).
  void install(Prepared& p, DatasetSummary& summary) {
    ++summary.variants;
    if (p.state == Prepared::State::Reject) {
      ++summary.rejected;
      return;
    }
    // Skipped, or the same variant as an earlier schedule of the class (prepared once).
    if (p.state == Prepared::State::Skip || present(p.key)) {
      ++summary.skipped;
      say("skip " + p.key + " (already in the dataset)");
      if (!p.staging.empty()) fs::remove_all(p.staging);
      return;
    }
    if (driver_) {
      say("run " + p.key + " on " + driver_->deviceName());
      p.row["gpu"] = runtime::gpuCheckReportJson(
          runtime::checkOnGpu(*driver_, p.code.schedule, p.staging, verificationSeed(p.schedule),
                              options_.gpuRepetitions));
    }
    const std::string dir = options_.outDir + "/" + p.key;
    fs::remove_all(dir);
    fs::create_directories(fs::path(dir).parent_path());
    fs::rename(p.staging, dir);
    rows_[p.key] = p.row;
    writeManifestAndClasses();
    ++summary.written;
    say("wrote " + p.key);
  }

  // Each schedule of a class, in order: prepared on up to options.threads threads (the first
  // of several schedules that emit the same variant only), then installed one at a time.
  void addClass(const DatasetClassInput& cls, DatasetSummary& summary) {
    std::vector<Prepared> prepared(cls.schedules.size());
    std::map<std::string, size_t> first;  // key -> the first schedule emitting it
    std::vector<size_t> todo;
    for (size_t i = 0; i < cls.schedules.size(); ++i) {
      prepared[i].schedule = emitted(cls.schedules[i]);
      prepared[i].key = keyOf(cls.program, prepared[i].schedule);
      if (first.emplace(prepared[i].key, i).second) todo.push_back(i);
    }
    tbb::task_arena arena(options_.threads > 0 ? options_.threads : tbb::task_arena::automatic);
    arena.execute([&] {
      tbb::parallel_for(size_t{0}, todo.size(), [&](size_t t) {
        prepared[todo[t]] = prepare(cls.program, cls.schedules[todo[t]]);
      });
    });
    for (size_t i = 0; i < prepared.size(); ++i) {
      // A repeat of an earlier schedule's variant is what that one was: rejected, or now there.
      const size_t at = first.at(prepared[i].key);
      if (at != i && prepared[at].state == Prepared::State::Reject) {
        prepared[i].state = Prepared::State::Reject;
      }
      install(prepared[i], summary);
    }
  }

  // The index once more from the rows, whatever this run wrote: a run killed between the
  // manifest's write and classes.json's leaves classes.json behind the manifest, and a rerun
  // that finds every variant already there would otherwise never rewrite it.
  void finish() {
    if (!rows_.empty()) writeManifestAndClasses();
  }

 private:
  void writeManifestAndClasses() { writeDatasetIndex(options_.outDir, rows_); }

  void say(const std::string& line) const {
    std::lock_guard lock(sayMutex_);
    if (options_.progress) options_.progress(line);
  }

  const DatasetOptions& options_;
  std::map<std::string, json> rows_;  // "<class>/<variant>" -> row, sorted
  std::unique_ptr<runtime::CudaDriver> driver_;
  mutable std::mutex sayMutex_;  // progress lines come from several threads
};

}  // namespace

DatasetSummary buildDataset(const std::vector<DatasetClassInput>& classes,
                            const DatasetOptions& options) {
  Builder builder(options);
  DatasetSummary summary;
  for (const DatasetClassInput& cls : classes) {
    ++summary.classes;
    builder.addClass(cls, summary);
  }
  builder.finish();
  return summary;
}

}  // namespace mugraph::dataset
