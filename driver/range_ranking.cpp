#include "driver/range_ranking.h"

#include <algorithm>
#include <cmath>

#include "search/range_cost.h"
#include "verify/equivalence_json.h"

namespace mugraph::driver {
namespace {

nlohmann::json finiteOrNull(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

}  // namespace

RangeRun checkAndRankOverRange(search::SearchResult& result, const graph::Program& program,
                               const plan::Target& target, uint64_t seed) {
  RangeRun range;
  range.searchedAt = graph::referenceValues(program);
  range.rankingLengths = search::rankingLengths(program);
  verify::EquivalenceOptions options;
  options.seed = seed;
  std::vector<search::VerifiedVariant> kept;
  for (search::VerifiedVariant& v : result.variants) {
    RangeVariant& rv = range.variants[v.name];
    rv.check = verify::checkOverRange(v.schedule, options);
    if (!rv.check.equivalent) {
      range.dropped.push_back(v.name);
      continue;
    }
    rv.costs = search::costOverRange(v.schedule, range.rankingLengths, target);
    kept.push_back(std::move(v));
  }
  std::vector<std::vector<double>> costs;
  for (const search::VerifiedVariant& v : kept) costs.push_back(range.variants.at(v.name).costs);
  const std::vector<double> scores = search::geometricMeanRelativeCost(costs);
  for (size_t i = 0; i < kept.size(); ++i) range.variants.at(kept[i].name).score = scores[i];
  std::stable_sort(kept.begin(), kept.end(),
                   [&](const search::VerifiedVariant& a, const search::VerifiedVariant& b) {
                     const double sa = range.variants.at(a.name).score;
                     const double sb = range.variants.at(b.name).score;
                     return sa != sb ? sa < sb : a.hash < b.hash;
                   });
  result.variants = std::move(kept);
  result.summary.verified = result.variants.size();
  if (program.dims.size() == 1 && !result.variants.empty()) {
    range.dispatchDim = program.dims.front().name;
    std::vector<int64_t> lengths;
    for (const graph::DimValues& values : range.rankingLengths) {
      lengths.push_back(values.at(range.dispatchDim));
    }
    std::vector<std::vector<double>> rows;
    for (const search::VerifiedVariant& v : result.variants) {
      rows.push_back(range.variants.at(v.name).costs);
    }
    for (const search::LengthBucket& b : search::lengthBuckets(
             lengths, program.dims.front().min, rows, search::kDispatchMargin)) {
      range.dispatch.push_back({b.min, b.max, result.variants[static_cast<size_t>(b.variant)].name,
                                b.microseconds});
    }
  }
  return range;
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
  if (!range.dispatch.empty()) {
    nlohmann::json buckets = nlohmann::json::array();
    for (const DispatchBucket& b : range.dispatch) {
      buckets.push_back({{"min", b.min},
                         {"max", b.max},
                         {"variant", b.variant},
                         {"cost_at_max_us", finiteOrNull(b.microseconds)}});
    }
    summary["dispatch"] = {{"dim", range.dispatchDim},
                           {"margin", search::kDispatchMargin},
                           {"buckets", buckets}};
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
  return {{"format", "mugraph.dispatch"}, {"version", 1},        {"program", program.name},
          {"dims", dims},                 {"dim", range.dispatchDim}, {"buckets", buckets}};
}

nlohmann::json rangeVariantJson(const RangeVariant& variant) {
  nlohmann::json costs = nlohmann::json::array();
  for (double c : variant.costs) costs.push_back(finiteOrNull(c));
  return {{"range_score", finiteOrNull(variant.score)},
          {"cost_over_range", costs},
          {"range_check", verify::rangeReportJson(variant.check)}};
}

}  // namespace mugraph::driver
