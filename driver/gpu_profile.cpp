#include "driver/gpu_profile.h"

#include <unistd.h>

#include <algorithm>
#include <any>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>

#include <tbb/info.h>

#include "distributed/ranks.h"
#include "distributed/work_queue.h"
#include "driver/variant_files.h"
#include "graph/error.h"
#include "runtime/gpu_check.h"

namespace mugraph::driver {

int gpuOfThisRank(int deviceCount) {
  return distributed::deviceForRank(
      distributed::localRank([](const char* name) { return std::getenv(name); },
                             distributed::rankInJob()),
      deviceCount);
}

std::unique_ptr<runtime::CudaDriver> openGpuForProfile(bool profile) {
  if (!profile) return nullptr;
  std::string whyNot;
  std::unique_ptr<runtime::CudaDriver> gpu = runtime::CudaDriver::open(whyNot, gpuOfThisRank);
  if (!gpu) {
    throw UserError("--profile",
                    "needs a GPU: " + whyNot + " (drop --profile to rank by the cost model)");
  }
  return gpu;
}

std::unique_ptr<runtime::CudaDriver> openGpuOfItsOwn(bool profile) {
  if (!profile) return nullptr;
  const int local = distributed::localRank([](const char* name) { return std::getenv(name); },
                                           distributed::rankInJob());
  int devices = 0;
  std::string whyNot;
  std::unique_ptr<runtime::CudaDriver> gpu =
      runtime::CudaDriver::open(whyNot, [&](int deviceCount) {
        devices = deviceCount;
        return distributed::deviceForRank(local, deviceCount);
      });
  if (!gpu || !distributed::hasGpuOfItsOwn(local, devices)) return nullptr;
  return gpu;
}

std::string encodeGpuOutcome(const GpuOutcome& o) {
  nlohmann::json j = {
      {"variant", o.variant},          {"mismatch", o.mismatch}, {"nan", o.nanElements},
      {"not_profiled", o.notProfiled}, {"seed", o.seed},         {"rank", o.rank},
      {"written", o.folderWritten}};
  // JSON has no infinity: a max relative error over an inf or NaN output is sent as null.
  j["max_rel_error"] = std::isfinite(o.maxRelError) ? nlohmann::json(o.maxRelError) : nullptr;
  if (o.microseconds) j["us"] = *o.microseconds;
  return j.dump();
}

GpuOutcome decodeGpuOutcome(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  GpuOutcome o;
  o.variant = j.at("variant").get<std::string>();
  if (j.contains("us")) o.microseconds = j.at("us").get<double>();
  o.mismatch = j.at("mismatch").get<bool>();
  o.maxRelError = j.at("max_rel_error").is_null() ? std::numeric_limits<double>::infinity()
                                                  : j.at("max_rel_error").get<double>();
  o.nanElements = j.at("nan").get<int64_t>();
  o.notProfiled = j.at("not_profiled").get<std::string>();
  o.seed = j.at("seed").get<uint64_t>();
  o.rank = j.at("rank").get<int>();
  o.folderWritten = j.at("written").get<bool>();
  return o;
}

namespace {

// Generates `v`'s code into dir/<variant>/ (on any thread), then checks it against the
// interpreter and times it holding `gpuMutex` (one variant at a time on the GPU).
GpuOutcome measureOne(const runtime::CudaDriver& gpu, std::mutex& gpuMutex,
                      const search::VerifiedVariant& v, const plan::Target& target,
                      const std::string& dir, bool intoOut) {
  GpuOutcome outcome{v.name, std::nullopt, false, 0, 0, "", v.hash, distributed::rankInJob()};
  try {
    const codegen::GeneratedCode code = variantCode(v.schedule, target);
    const std::string folder = dir + "/" + v.name;
    codegen::writeGeneratedCode(code, folder);
    outcome.folderWritten = intoOut;
    std::lock_guard lock(gpuMutex);
    gpu.makeCurrent();
    const runtime::GpuCheckReport r =
        runtime::checkOnGpu(gpu, code.schedule, folder, outcome.seed, /*repetitions=*/50);
    if (r.matches) {
      outcome.microseconds = r.timing.medianMicroseconds;
    } else {
      outcome.mismatch = true;
      outcome.maxRelError = r.maxRelError;
      outcome.nanElements = r.unwrittenElements;
    }
  } catch (const std::exception& e) {
    outcome.notProfiled = e.what();
  }
  return outcome;
}

}  // namespace

GpuMeasurements measureOnGpu(const runtime::CudaDriver* gpu, const search::SearchResult& result,
                             const plan::Target& target, const std::string& out, int threads) {
  threads = threads > 0 ? threads : tbb::info::default_concurrency();
  // Rank 0 writes into `out`; any other rank, and rank 0 without `out`, into a scratch folder.
  const bool intoOut = distributed::isRoot() && !out.empty();
  const std::string dir = intoOut ? out
                                  : (std::filesystem::temp_directory_path() /
                                     ("mugraph_profile_" + std::to_string(::getpid())))
                                        .string();
  GpuMeasurements measured;
  measured.outcomes.resize(result.variants.size());
  distributed::WorkItems work;
  for (size_t i = 0; i < result.variants.size(); ++i) work.items.push_back(static_cast<int>(i));
  // A rank with a GPU of its own takes as many variants at once as it has threads: their code
  // is generated concurrently, and they take the GPU one at a time, so that no two timings
  // share it. A rank without one takes none.
  std::mutex gpuMutex;
  work.threadsPerRank = gpu ? std::max(threads, 1) : 0;
  work.run = [&](int i) {
    return std::any(measureOne(*gpu, gpuMutex, result.variants[i], target, dir, intoOut));
  };
  work.encode = [](const std::any& r) {
    return encodeGpuOutcome(std::any_cast<const GpuOutcome&>(r));
  };
  work.decode = [](const std::string& bytes) { return std::any(decodeGpuOutcome(bytes)); };
  work.collect = [&](int i, std::any&& r, double) {
    GpuOutcome& outcome = measured.outcomes[i] = std::any_cast<GpuOutcome&&>(std::move(r));
    const std::string where =
        distributed::ranks() > 1 ? " (rank " + std::to_string(outcome.rank) + ")" : "";
    if (!outcome.notProfiled.empty()) {
      std::cerr << "mugraph: warning: " << outcome.variant << ": not profiled" << where << ": "
                << outcome.notProfiled << "\n";
    }
    if (outcome.microseconds) {
      std::cerr << "profile: " << outcome.variant << " " << *outcome.microseconds << " us" << where
                << "\n";
    }
  };
  const std::atomic<bool> never{false};
  const std::vector<distributed::RankShare> shares = distributed::runOnEveryRank(work, never);
  for (const distributed::RankShare& share : shares) measured.profiledByRank.push_back(share.items);
  if (!intoOut) std::filesystem::remove_all(dir);
  return measured;
}

ProfileRanking rankByMeasuredTime(search::SearchResult& result,
                                  const std::vector<GpuOutcome>& outcomes, const std::string& out) {
  ProfileRanking ranking;
  std::map<std::string, const GpuOutcome*> byName;
  for (const GpuOutcome& o : outcomes) byName[o.variant] = &o;
  std::vector<search::VerifiedVariant> kept;
  for (search::VerifiedVariant& v : result.variants) {
    const auto found = byName.find(v.name);
    const GpuOutcome* outcome = found == byName.end() ? nullptr : found->second;
    if (outcome && outcome->mismatch) {
      DroppedVariant dropped{v.name, v.hash, outcome->maxRelError, outcome->seed, ""};
      if (!out.empty() && std::filesystem::exists(out + "/" + v.name)) {
        dropped.folder = out + "/" + kDroppedOnGpuFolder + "/" + v.name;
        std::filesystem::remove_all(dropped.folder);
        std::filesystem::create_directories(out + "/" + kDroppedOnGpuFolder);
        std::filesystem::rename(out + "/" + v.name, dropped.folder);
      }
      std::cerr << "mugraph: " << v.name
                << ": dropped, its GPU result does not match the interpreter (max relative "
                   "error "
                << outcome->maxRelError;
      if (outcome->nanElements > 0) std::cerr << "; " << outcome->nanElements << " elements NaN";
      std::cerr << "; inputs seed " << dropped.seed;
      if (!dropped.folder.empty()) {
        std::cerr << "; reproduce: mugraph replay " << dropped.folder
                  << "/schedule.json --run --seed " << dropped.seed;
      }
      std::cerr << ")\n";
      ranking.dropped.push_back(std::move(dropped));
      continue;
    }
    ranking.measured[v.name] = outcome && outcome->microseconds
                                   ? *outcome->microseconds
                                   : std::numeric_limits<double>::infinity();
    if (outcome && outcome->folderWritten) ranking.written.insert(v.name);
    kept.push_back(std::move(v));
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [&](const search::VerifiedVariant& a, const search::VerifiedVariant& b) {
                     return ranking.measured[a.name] < ranking.measured[b.name];
                   });
  result.variants = std::move(kept);
  result.summary.verified = result.variants.size();
  return ranking;
}

}  // namespace mugraph::driver
