// Equivalence of a dynamic schedule with its program at one length, and over the whole range:
// at each length lengthsCoveringRange chooses (verify/dynamic_lengths.h), the static schedule
// and program that graph::instantiate gives are checked as any static pair is. The range's
// verdict is equivalent only if every length's is.
#pragma once

#include <string>
#include <vector>

#include "graph/dynamic_dims.h"
#include "verify/dynamic_lengths.h"
#include "verify/equivalence.h"

namespace mugraph::verify {

// The schedule and its program instantiated at `values`, checked. UserError if the schedule
// cannot run at that length (graph::instantiate says why).
EquivalenceReport checkAtLength(const graph::Schedule& schedule, const graph::DimValues& values,
                                const EquivalenceOptions& options);

struct LengthVerdict {
  LengthCase length;
  bool equivalent = false;
  std::string unreachable;  // why the schedule cannot run at this length; then no report
  EquivalenceReport report;
};

struct RangeReport {
  bool equivalent = false;
  std::vector<LengthVerdict> lengths;
};

// Every length of lengthsCoveringRange(schedule.graph), each with options' seed (fresh random
// inputs are drawn per length and trial from it).
RangeReport checkOverRange(const graph::Schedule& schedule, const EquivalenceOptions& options);

}  // namespace mugraph::verify
