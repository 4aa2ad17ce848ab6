// Ranking a dynamic program's schedules over its range (issue 28). A schedule of a dynamic
// program serves every length, and which one is fastest changes with the length (small
// tiles win short lengths, large ones long). The cost model is evaluated on each candidate
// instantiated (graph::instantiate) at a few representative lengths, and candidates are
// ranked by one stated aggregate: the geometric mean, over those lengths, of the candidate's
// cost relative to the best candidate's at that length. 1 is best everywhere; 1.10 is 10%
// slower than the best on (geometric) average. Relative costs weigh every length alike, so
// the longest lengths' microseconds do not drown the short ones.
#pragma once

#include <string>
#include <vector>

#include "graph/dynamic_dims.h"
#include "graph/ir.h"
#include "plan/target.h"
#include "search/cost_model.h"

namespace mugraph::search {

// The lengths a dynamic graph's candidates are costed at: for each dynamic dim in turn, its
// min, every power of two strictly inside its range and its max (one length per power-of-two
// bucket), the other dims at their max (their reference). Sorted, no repeats; empty for a
// static graph.
std::vector<graph::DimValues> rankingLengths(const graph::KernelGraph& graph);

// The microseconds of `schedule` instantiated at each of `lengths`; +infinity at a length the
// schedule cannot run at.
std::vector<double> costOverRange(const graph::Schedule& schedule,
                                  const std::vector<graph::DimValues>& lengths,
                                  const plan::Target& target,
                                  const CostConstants& constants = calibratedConstants());

// The aggregate: costs[c][l] is candidate c's cost at length l (every row as long). Per
// candidate, the geometric mean over l of costs[c][l] / min over candidates of costs[·][l].
// A length where no candidate has a finite cost is skipped; a candidate with an infinite
// cost at a length where another is finite gets +infinity.
std::vector<double> geometricMeanRelativeCost(const std::vector<std::vector<double>>& costs);

// "geometric mean over lengths of the cost relative to the best candidate at each length":
// what the summary says the ranking is.
inline constexpr const char* kRangeRankingAggregate =
    "geometric mean over the lengths of the cost relative to the best candidate at each length";

}  // namespace mugraph::search
