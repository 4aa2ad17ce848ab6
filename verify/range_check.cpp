#include "verify/range_check.h"

#include <optional>

#include <tbb/parallel_for.h>

#include "graph/error.h"

namespace mugraph::verify {

EquivalenceReport checkAtLength(const graph::Schedule& schedule, const graph::DimValues& values,
                                const EquivalenceOptions& options) {
  const graph::Schedule at = graph::instantiate(schedule, values);
  return checkEquivalence(at.program, at.graph, options);
}

RangeReport checkOverRange(const graph::Schedule& schedule, const EquivalenceOptions& options) {
  const std::vector<LengthCase> lengths = lengthsCoveringRange(schedule.graph);
  RangeReport range;
  range.lengths.resize(lengths.size());
  // Each length is its own check with the same seed: run at once, the verdicts are the same as
  // one after another (the range's end, where a check takes minutes, runs beside the rest).
  tbb::parallel_for(size_t{0}, lengths.size(), [&](size_t i) {
    LengthVerdict& verdict = range.lengths[i];
    verdict.length = lengths[i];
    std::optional<graph::Schedule> at;
    try {
      at = graph::instantiate(schedule, verdict.length.values);
    } catch (const UserError& e) {
      verdict.unreachable = e.what();
    }
    if (at) {
      verdict.report = checkEquivalence(at->program, at->graph, options);
      verdict.equivalent = verdict.report.equivalent;
    }
  });
  range.equivalent = true;
  for (const LengthVerdict& verdict : range.lengths) {
    range.equivalent = range.equivalent && verdict.equivalent;
  }
  return range;
}

}  // namespace mugraph::verify
