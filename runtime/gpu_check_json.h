// The GPU check report as JSON: the one schema that `mugraph replay --run --json` prints and
// every dataset row's "gpu" holds.
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/gpu_check.h"

namespace mugraph::runtime {

// {"device", "ptx_arch", "seed", "inputs" (how they were drawn), "matches", "max_rel_error",
// "tolerance",
//  "unwritten_elements", "outputs": {name: error}, "timing": {"median_us", "p10_us", "p90_us",
//  "min_us", "repetitions"}}. An infinite error is written as null: JSON has no infinity.
nlohmann::json gpuCheckReportJson(const GpuCheckReport& report);

}  // namespace mugraph::runtime
