#include "driver/gpu_profile.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>

#include "distributed/ranks.h"
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

std::vector<GpuOutcome> measureOnGpu(const runtime::CudaDriver& gpu,
                                     const search::SearchResult& result, const plan::Target& target,
                                     const std::string& out) {
  const std::string scratch = out.empty() ? (std::filesystem::temp_directory_path() /
                                             ("mugraph_profile_" + std::to_string(::getpid())))
                                                .string()
                                          : out;
  std::vector<GpuOutcome> outcomes;
  for (const search::VerifiedVariant& v : result.variants) {
    GpuOutcome outcome{v.name, std::nullopt, false, 0, 0, "", v.hash};
    try {
      const codegen::GeneratedCode code = variantCode(v.schedule, target);
      const std::string dir = scratch + "/" + v.name;
      codegen::writeGeneratedCode(code, dir);
      const runtime::GpuCheckReport r =
          runtime::checkOnGpu(gpu, code.schedule, dir, outcome.seed, /*repetitions=*/50);
      if (r.matches) {
        outcome.microseconds = r.timing.medianMicroseconds;
      } else {
        outcome.mismatch = true;
        outcome.maxRelError = r.maxRelError;
        outcome.nanElements = r.unwrittenElements;
      }
    } catch (const std::exception& e) {
      outcome.notProfiled = e.what();
      std::cerr << "mugraph: warning: " << v.name << ": not profiled: " << e.what() << "\n";
    }
    if (outcome.microseconds) {
      std::cerr << "profile: " << v.name << " " << *outcome.microseconds << " us\n";
    }
    outcomes.push_back(outcome);
  }
  if (out.empty()) std::filesystem::remove_all(scratch);
  return outcomes;
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
