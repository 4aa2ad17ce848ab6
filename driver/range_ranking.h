// The dynamic-program steps of `mugraph superoptimize` (issue 28). The search runs at the
// reference length (every dynamic dim at its max) and builds only length-independent
// candidates (search/dynamic_choices.h); its verified variants are then checked over the
// whole range (verify/range_check.h: every structural case of every cut), those not
// equivalent at every length are dropped, and the rest are ranked by the cost model over the
// range (search/range_cost.h). The summary says so and lists the lengths.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/dynamic_dims.h"
#include "plan/target.h"
#include "runtime/cuda_driver.h"
#include "search/superoptimize.h"
#include "verify/range_check.h"

namespace mugraph::driver {

struct RangeVariant {
  verify::RangeReport check;
  std::vector<double> costs;  // microseconds at each of RangeRun::rankingLengths
  double score = 0;           // search::geometricMeanRelativeCost (1 = best everywhere)
  // --profile: measured microseconds at each ranking length (the score and the dispatch then
  // follow these), and the lengths its GPU result was checked against the interpreter at.
  std::vector<double> measured;
  std::vector<graph::DimValues> gpuChecked;
};

// One bucket of a dispatch: lengths [min, max] of the dim run variant `variant`.
struct DispatchBucket {
  int64_t min = 0;
  int64_t max = 0;
  std::string variant;
  double microseconds = 0;  // the cost model's estimate at `max`
};

struct RangeRun {
  graph::DimValues searchedAt;  // the reference length: every dim at its max
  std::vector<graph::DimValues> rankingLengths;
  std::map<std::string, RangeVariant> variants;  // by variant name, the kept and the dropped
  std::vector<std::string> dropped;              // not equivalent over the range, by name
  // A program of one dynamic dim: which variant runs which of its lengths
  // (search::lengthBuckets over the ranking lengths, search::kDispatchMargin); empty else.
  std::string dispatchDim;
  std::vector<DispatchBucket> dispatch;
  bool measured = false;                  // --profile ranked the variants (profileOverRange)
  std::vector<std::string> droppedOnGpu;  // "NAME: why", each left out of the variants
};

// Checks every variant of `result` over its range with `seed`, removes those not equivalent
// at every length (RangeRun::dropped) and re-sorts the rest by the range score (then by
// hash). `result.summary.verified` follows.
RangeRun checkAndRankOverRange(search::SearchResult& result, const graph::Program& program,
                               const plan::Target& target, uint64_t seed);

// --profile of a dynamic program: each variant's kernels (one PTX for the range) generated into
// out/<variant>/ (a scratch folder when `out` is empty), checked against the interpreter at each
// ranking length whose program has at most kGpuCheckWork multiply-adds, and timed at every
// ranking length (CUDA-graph replays, L2 flushed). A variant that does not match, or cannot
// run, at a length is dropped from the variants, with the reason on stderr and in the
// summary. The rest are ranked by the range score of their measured times, and the dispatch
// follows the measured times too. The interpreter's reference is evaluated once per length
// (its inputs drawn with that length's seed) and every variant is checked against it; the bound
// keeps that quick: at 2^30, with a reference per variant and length, a 65536-position decode's
// 16 variants (17 lengths each, up to 2^29 multiply-adds) did not finish profiling in 10
// minutes on 16 cores. The range check on the CPU has verified every length's structure; the
// GPU check is of the code.
inline constexpr double kGpuCheckWork = 1u << 27;
void profileOverRange(const runtime::CudaDriver& gpu, search::SearchResult& result,
                      RangeRun& range, const graph::Program& program, const plan::Target& target,
                      const std::string& out);

// summary["range"]: the dims, the ranking lengths and aggregate, the dropped variants, and
// the dispatch (its buckets), where there is one.
nlohmann::json rangeSummaryJson(const graph::Program& program, const RangeRun& range);

// dispatch.json ("format": "mugraph.dispatch", version 1) beside the variants' folders: the
// program's dims and, per bucket, the lengths it serves and the folder of the variant whose
// kernels run them (mugraph_launch.py's Dispatch reads it; codegen/README.md).
nlohmann::json dispatchJson(const graph::Program& program, const RangeRun& range);
// The per-variant fields: "range_score", "cost_over_range" (per ranking length) and
// "range_check" (verify::rangeReportJson).
nlohmann::json rangeVariantJson(const RangeVariant& variant);

}  // namespace mugraph::driver
