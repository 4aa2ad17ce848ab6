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
// min, every power of two and every power of two times 1.5 strictly inside its range, and its
// max, the other dims at their max (their reference). Sorted, no repeats; empty for a static
// graph. Two lengths per octave, not one: a schedule's parts and tiles fit a length exactly or
// waste up to a tile per part, and at powers of two alone the power-of-two tiles always fit
// (16 parts of 96-key tiles serve 3000 keys in two full trips, but lose to 128-key tiles at
// both 2048 and 4096, so a dispatch decided there never runs them).
std::vector<graph::DimValues> rankingLengths(const graph::KernelGraph& graph);

// The microseconds of `schedule` instantiated at each of `lengths`; +infinity at a length the
// schedule cannot run at.
std::vector<double> costOverRange(const graph::Schedule& schedule,
                                  const std::vector<graph::DimValues>& lengths,
                                  const plan::Target& target,
                                  const CostConstants& constants = calibratedConstants());

// The microseconds of kernel `kernelIndex` of `graph` (complete or not) instantiated at each
// of `lengths` (estimateKernelMicroseconds); +infinity at a length it cannot run at.
std::vector<double> kernelCostOverRange(const graph::KernelGraph& graph, int kernelIndex,
                                        const std::vector<graph::DimValues>& lengths,
                                        const plan::Target& target,
                                        const CostConstants& constants = calibratedConstants());

// The geometric mean of costOverRange at rankingLengths(schedule.graph): ordering candidates by
// it orders them as geometricMeanRelativeCost does (the per-length best divides every
// candidate alike), so a tile that wins the short lengths is not ranked by the longest alone.
double geometricMeanCostOverRange(const graph::Schedule& schedule, const plan::Target& target,
                                  const CostConstants& constants = calibratedConstants());

// A candidate's place in the search's pool, which decides what is verified (lower first): its
// estimate at the program's shapes, or for a dynamic program geometricMeanCostOverRange, whose
// costOverRange it leaves in `atLengths` where given (empty for a static program).
double poolCost(const graph::Schedule& schedule, const plan::Target& target,
                std::vector<double>* atLengths = nullptr);

// The aggregate: costs[c][l] is candidate c's cost at length l (every row as long). Per
// candidate, the geometric mean over l of costs[c][l] / min over candidates of costs[·][l].
// A length where no candidate has a finite cost is skipped; a candidate with an infinite
// cost at a length where another is finite gets +infinity.
std::vector<double> geometricMeanRelativeCost(const std::vector<std::vector<double>>& costs);

// A dispatch over the lengths of one dynamic dim (issue 28's per-length buckets): which
// variant serves which lengths, so that a short length runs a small tile and a long one a
// large tile, each from one PTX that takes the lengths. Bucket i serves the lengths in
// (lengths[i - 1], lengths[i]] (the first from the dim's min) and is given the variant the
// cost model estimates cheapest at lengths[i], unless the first-ranked variant (row 0) is
// within `margin` of it there: a switch must pay for itself. Adjacent buckets of one variant
// are merged. A length no variant can run at gets none (a gap, which the summary shows).
struct LengthBucket {
  int64_t min = 0;
  int64_t max = 0;
  int variant = 0;  // row of `costs`
  double microseconds = 0;  // its estimate at `max`
};

// costs[v][l]: variant v's estimate at lengths[l] (lengths sorted, increasing, within
// [dimMin, ...]); variants in rank order. Each length runs its fastest variant, except that a
// variant within `margin` of it is kept: the previous bucket's, else the first-ranked one.
std::vector<LengthBucket> lengthBuckets(const std::vector<int64_t>& lengths, int64_t dimMin,
                                        const std::vector<std::vector<double>>& costs,
                                        double margin);

// Which candidates to verify first for a dispatch: costs[c][l] is candidate c's estimate at
// ranking length l. Round 1 takes each length's cheapest, each later round each length's
// cheapest not yet taken; candidates in the order taken, none twice, none with no finite cost.
// Within a round the next taken is the one whose addition leaves the taken set's loss over the
// range smallest (the sum over lengths of the log of its cheapest cost over the best), so a
// verification that stops after a few (--max-variants) still has a variant fast at every
// length, not only the short lengths' many near-equal winners.
std::vector<size_t> cheapestAtEachLength(const std::vector<std::vector<double>>& costs, int rounds);

// What a switch of variant must save at a bucket's length (lengthBuckets' `margin`).
inline constexpr double kDispatchMargin = 0.03;

// "geometric mean over lengths of the cost relative to the best candidate at each length":
// what the summary says the ranking is.
inline constexpr const char* kRangeRankingAggregate =
    "geometric mean over the lengths of the cost relative to the best candidate at each length";

}  // namespace mugraph::search
