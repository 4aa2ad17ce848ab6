// What a run writes: each verified variant's folder (schedule.json, kernel.cu, PTX for the
// target, resources.json, manifest.json, exactly as `mugraph replay` writes them) and the
// summary JSON, whose fields tests/tools/ check.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "codegen/generate.h"
#include "driver/gpu_profile.h"
#include "driver/range_ranking.h"
#include "graph/ir.h"
#include "plan/target.h"
#include "search/superoptimize.h"

namespace mugraph::driver {

// A variant's code for the target it was searched for, as `mugraph replay --arch` makes it.
codegen::GeneratedCode variantCode(const graph::Schedule& schedule, const plan::Target& target);

// The kernel grids of a schedule, one per kernel ("-" for a predefined op), space-separated.
std::string gridsOf(const graph::KernelGraph& graph);

// Why a search ended with no verified variant, in one sentence for the summary; empty when
// it has variants.
std::string whyNoVariants(const search::SearchResult& result, const ProfileRanking& ranking,
                          const RangeRun* range = nullptr);

// `range` (a dynamic program: the range check and ranking) adds "range" and each variant's
// range fields, and "ranked_by" says the ranking is over the range.
nlohmann::json summaryJson(const search::SearchResult& result, const ProfileRanking& ranking,
                           const graph::Program* program = nullptr,
                           const RangeRun* range = nullptr);

// Writes every variant's folder under `out` and out/summary.json; returns how many verified
// variants got no code (a code generator bug: the rest is still written). A dynamic variant's
// folder holds its schedule.json only: its kernels are generated per length by
// `mugraph replay schedule.json --dim NAME=LENGTH`. The code is generated on `threads`
// threads (0: every core); the files do not depend on how many.
int writeVariants(const search::SearchResult& result, const ProfileRanking& ranking,
                  const plan::Target& target, const std::string& out, int threads,
                  const graph::Program* program = nullptr, const RangeRun* range = nullptr);

}  // namespace mugraph::driver
