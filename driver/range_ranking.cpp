#include "driver/range_ranking.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

#include <tbb/parallel_for.h>

#include "driver/gpu_profile.h"
#include "driver/variant_files.h"
#include "runtime/gpu_check.h"
#include "search/range_cost.h"
#include "verify/equivalence_json.h"
#include "verify/scaled_twin.h"

namespace mugraph::driver {
namespace {

nlohmann::json finiteOrNull(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

// The timed replays of each length --profile measures.
constexpr int kRepetitions = 30;
// The seed of the inputs --profile checks at the first ranking length (the l-th: this + l).
constexpr uint64_t kReferenceSeed = 0x9e3779b9;

// A program of one dynamic dim: its dispatch over the ranking lengths, from the variants'
// measured times where --profile took them, else the cost model's.
void setDispatch(RangeRun& range, const graph::Program& program,
                 const std::vector<search::VerifiedVariant>& variants) {
  range.dispatchDim.clear();
  range.dispatch.clear();
  if (program.dims.size() != 1 || variants.empty()) return;
  range.dispatchDim = program.dims.front().name;
  std::vector<int64_t> lengths;
  for (const graph::DimValues& values : range.rankingLengths) {
    lengths.push_back(values.at(range.dispatchDim));
  }
  std::vector<std::vector<double>> rows;
  for (const search::VerifiedVariant& v : variants) {
    const RangeVariant& rv = range.variants.at(v.name);
    rows.push_back(range.measured ? rv.measured : rv.costs);
  }
  for (const search::LengthBucket& b :
       search::lengthBuckets(lengths, program.dims.front().min, rows, search::kDispatchMargin)) {
    range.dispatch.push_back(
        {b.min, b.max, variants[static_cast<size_t>(b.variant)].name, b.microseconds});
  }
}

// The variants `kept` ranked by the range score of their measured times where --profile took
// them, else of the cost model's (then by hash), as the result's variants; the dispatch follows.
void rankAndDispatch(RangeRun& range, const graph::Program& program,
                     std::vector<search::VerifiedVariant> kept, search::SearchResult& result) {
  std::vector<std::vector<double>> rows;
  for (const search::VerifiedVariant& v : kept) {
    const RangeVariant& rv = range.variants.at(v.name);
    rows.push_back(range.measured ? rv.measured : rv.costs);
  }
  const std::vector<double> scores = search::geometricMeanRelativeCost(rows);
  for (size_t i = 0; i < kept.size(); ++i) range.variants.at(kept[i].name).score = scores[i];
  std::stable_sort(kept.begin(), kept.end(),
                   [&](const search::VerifiedVariant& a, const search::VerifiedVariant& b) {
                     const double sa = range.variants.at(a.name).score;
                     const double sb = range.variants.at(b.name).score;
                     return sa != sb ? sa < sb : a.hash < b.hash;
                   });
  result.variants = std::move(kept);
  result.summary.verified = result.variants.size();
  setDispatch(range, program, result.variants);
}

}  // namespace

RangeRun checkAndRankOverRange(search::SearchResult& result, const graph::Program& program,
                               const plan::Target& target, uint64_t seed) {
  RangeRun range;
  range.searchedAt = graph::referenceValues(program);
  range.rankingLengths = search::rankingLengths(program);
  verify::EquivalenceOptions options;
  options.seed = seed;
  // Every variant's range check at once (each is independent; their lengths run at once too).
  std::vector<verify::RangeReport> checks(result.variants.size());
  tbb::parallel_for(size_t{0}, checks.size(), [&](size_t i) {
    checks[i] = verify::checkOverRange(result.variants[i].schedule, options);
  });
  std::vector<search::VerifiedVariant> kept;
  for (size_t i = 0; i < result.variants.size(); ++i) {
    search::VerifiedVariant& v = result.variants[i];
    RangeVariant& rv = range.variants[v.name];
    rv.check = std::move(checks[i]);
    if (!rv.check.equivalent) {
      range.dropped.push_back(v.name);
      continue;
    }
    rv.costs = search::costOverRange(v.schedule, range.rankingLengths, target);
    kept.push_back(std::move(v));
  }
  rankAndDispatch(range, program, std::move(kept), result);
  return range;
}

void profileOverRange(const runtime::CudaDriver& gpu, search::SearchResult& result, RangeRun& range,
                      const graph::Program& program, const plan::Target& target,
                      const std::string& out) {
  const std::string scratch = out.empty() ? (std::filesystem::temp_directory_path() /
                                             ("mugraph_profile_" + std::to_string(::getpid())))
                                                .string()
                                          : out;
  // Every variant's kernels first; then length by length, one reference of the interpreter
  // (inputs drawn with that length's seed) that every variant is checked against.
  std::vector<std::string> failures(result.variants.size());
  for (size_t i = 0; i < result.variants.size(); ++i) {
    const search::VerifiedVariant& v = result.variants[i];
    try {
      codegen::writeGeneratedCode(variantCode(v.schedule, target), scratch + "/" + v.name);
    } catch (const std::exception& e) {
      failures[i] = std::string("not profiled: ") + e.what();
    }
  }
  for (size_t l = 0; l < range.rankingLengths.size(); ++l) {
    const graph::DimValues& at = range.rankingLengths[l];
    const graph::Program instance = graph::instantiate(program, at);
    std::optional<runtime::ProgramReference> reference;
    if (verify::matmulWork(instance) <= kGpuCheckWork) {
      reference = runtime::referenceRun(instance, kReferenceSeed + l, {});
    }
    for (size_t i = 0; i < result.variants.size(); ++i) {
      if (!failures[i].empty()) continue;
      const search::VerifiedVariant& v = result.variants[i];
      RangeVariant& rv = range.variants.at(v.name);
      const std::string dir = scratch + "/" + v.name;
      try {
        if (reference) {
          const runtime::GpuCheckReport r =
              runtime::checkAgainstReference(gpu, *reference, dir, kRepetitions, at);
          if (!r.matches) {
            failures[i] = "its GPU result at " + graph::dimValuesText(at) +
                          " does not match the interpreter (max relative error " +
                          std::to_string(r.maxRelError) + ", " +
                          std::to_string(r.unwrittenElements) + " elements NaN or unwritten)";
            continue;
          }
          rv.gpuChecked.push_back(at);
          rv.measured.push_back(r.timing.medianMicroseconds);
        } else {
          rv.measured.push_back(runtime::timeOnGpu(gpu, instance, dir, v.hash, kRepetitions, {}, at)
                                    .medianMicroseconds);
        }
      } catch (const std::exception& e) {
        failures[i] = std::string("not profiled: ") + e.what();
      }
    }
  }
  std::vector<search::VerifiedVariant> kept;
  for (size_t i = 0; i < result.variants.size(); ++i) {
    search::VerifiedVariant& v = result.variants[i];
    const RangeVariant& rv = range.variants.at(v.name);
    const std::string& failure = failures[i];
    if (!failure.empty()) {
      std::string kept;
      if (!out.empty() && std::filesystem::exists(scratch + "/" + v.name)) {
        // Out of the variants' way, kept as evidence (as gpu_profile.h does for static ones).
        const std::string evidence = out + "/" + kDroppedOnGpuFolder;
        std::filesystem::create_directories(evidence);
        std::filesystem::remove_all(evidence + "/" + v.name);
        std::filesystem::rename(scratch + "/" + v.name, evidence + "/" + v.name);
        kept = " (its folder: " + evidence + "/" + v.name + ")";
      }
      std::cerr << "mugraph: " << v.name << ": dropped, " << failure << kept << "\n";
      range.droppedOnGpu.push_back(v.name + ": " + failure);
      continue;
    }
    std::cerr << "profile: " << v.name << " at " << rv.measured.size() << " lengths, "
              << rv.gpuChecked.size() << " of them checked\n";
    kept.push_back(std::move(v));
  }
  if (out.empty()) std::filesystem::remove_all(scratch);
  range.measured = true;
  rankAndDispatch(range, program, std::move(kept), result);
}

nlohmann::json rangeSummaryJson(const graph::Program& program, const RangeRun& range) {
  nlohmann::json dims = nlohmann::json::array();
  for (const graph::DynamicDim& d : program.dims) {
    dims.push_back({{"name", d.name}, {"min", d.min}, {"max", d.max}});
  }
  nlohmann::json dropped = nlohmann::json::array();
  for (const std::string& name : range.dropped) {
    dropped.push_back(
        {{"name", name}, {"range_check", verify::rangeReportJson(range.variants.at(name).check)}});
  }
  nlohmann::json summary = {{"dims", dims},
                            {"searched_at", range.searchedAt},
                            {"ranked_over", range.rankingLengths},
                            {"aggregate", search::kRangeRankingAggregate},
                            {"dropped_by_range_check", dropped}};
  if (range.measured) {
    summary["measured"] =
        "median of " + std::to_string(kRepetitions) +
        " CUDA-graph replays at each ranking length (L2 flushed); checked against "
        "the interpreter where the program has at most " +
        std::to_string(static_cast<int64_t>(kGpuCheckWork)) + " multiply-adds";
    summary["dropped_on_gpu"] = range.droppedOnGpu;
  }
  if (!range.dispatch.empty()) {
    nlohmann::json buckets = nlohmann::json::array();
    for (const DispatchBucket& b : range.dispatch) {
      buckets.push_back({{"min", b.min},
                         {"max", b.max},
                         {"variant", b.variant},
                         {range.measured ? "measured_at_max_us" : "cost_at_max_us",
                          finiteOrNull(b.microseconds)}});
    }
    summary["dispatch"] = {
        {"dim", range.dispatchDim}, {"margin", search::kDispatchMargin}, {"buckets", buckets}};
  }
  return summary;
}

nlohmann::json dispatchJson(const graph::Program& program, const RangeRun& range) {
  nlohmann::json dims = nlohmann::json::array();
  for (const graph::DynamicDim& d : program.dims) {
    dims.push_back({{"name", d.name}, {"min", d.min}, {"max", d.max}});
  }
  nlohmann::json buckets = nlohmann::json::array();
  for (const DispatchBucket& b : range.dispatch) {
    buckets.push_back({{"min", b.min}, {"max", b.max}, {"variant", b.variant}});
  }
  return {{"format", "mugraph.dispatch"}, {"version", 1},
          {"program", program.name},      {"dims", dims},
          {"dim", range.dispatchDim},     {"buckets", buckets}};
}

nlohmann::json rangeVariantJson(const RangeVariant& variant) {
  nlohmann::json costs = nlohmann::json::array();
  for (double c : variant.costs) costs.push_back(finiteOrNull(c));
  nlohmann::json json = {{"range_score", finiteOrNull(variant.score)},
                         {"cost_over_range", costs},
                         {"range_check", verify::rangeReportJson(variant.check)}};
  if (!variant.measured.empty()) {
    nlohmann::json measured = nlohmann::json::array();
    for (double us : variant.measured) measured.push_back(finiteOrNull(us));
    json["measured_over_range"] = measured;
    json["gpu_checked_at"] = variant.gpuChecked;
  }
  return json;
}

}  // namespace mugraph::driver
