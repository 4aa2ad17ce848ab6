// The equivalence report as JSON: the one schema that `mugraph check --json`, `mugraph verify
// --json` and every dataset row's "verification" share, so a field means the same wherever
// it is read.
#pragma once

#include <nlohmann/json.hpp>

#include "verify/equivalence.h"
#include "verify/range_check.h"

namespace mugraph::verify {

// {"equivalent", "level", "trials", "resampled_trials", "seed", "degree", "per_trial_bound",
//  "false_accept_bound", "max_rel_error"}, plus "level_reason" and "mismatch" when they are
// not empty. An infinite error is written as null: JSON has no infinity.
nlohmann::json equivalenceReportJson(const EquivalenceReport& report);

// {"equivalent", "lengths": [{"dims", "cases", "equivalent", and "report" or "unreachable"}]}:
// a dynamic schedule's verdict over its range (`mugraph check --json`, the summary of
// `mugraph superoptimize` of a dynamic program).
nlohmann::json rangeReportJson(const RangeReport& report);

}  // namespace mugraph::verify
