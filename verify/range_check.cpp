#include "verify/range_check.h"

#include <optional>

#include "graph/error.h"

namespace mugraph::verify {

EquivalenceReport checkAtLength(const graph::Schedule& schedule, const graph::DimValues& values,
                                const EquivalenceOptions& options) {
  const graph::Schedule at = graph::instantiate(schedule, values);
  return checkEquivalence(at.program, at.graph, options);
}

RangeReport checkOverRange(const graph::Schedule& schedule, const EquivalenceOptions& options) {
  RangeReport range;
  range.equivalent = true;
  for (const LengthCase& length : lengthsCoveringRange(schedule.graph)) {
    LengthVerdict verdict;
    verdict.length = length;
    std::optional<graph::Schedule> at;
    try {
      at = graph::instantiate(schedule, length.values);
    } catch (const UserError& e) {
      verdict.unreachable = e.what();
    }
    if (at) {
      verdict.report = checkEquivalence(at->program, at->graph, options);
      verdict.equivalent = verdict.report.equivalent;
    }
    range.equivalent = range.equivalent && verdict.equivalent;
    range.lengths.push_back(std::move(verdict));
  }
  return range;
}

}  // namespace mugraph::verify
