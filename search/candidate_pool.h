// The search's pool of candidates: complete schedules with their estimates, and the rule for
// which of them are kept (the best by cost, the best of each solution shape, and of a dynamic
// program each ranking length's cheapest), independent of the order they arrive in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "graph/ir.h"

namespace mugraph::search {

struct Candidate {
  uint64_t hash = 0;
  double cost = 0;
  int origin = 0;      // ordinal of the top-level subtree that found it
  int gridSplits = 0;  // see PartialSchedule
  graph::Schedule schedule;
  // A dynamic program's: the estimate at each ranking length (search::costOverRange), whose
  // geometric mean is `cost`; empty for a static program.
  std::vector<double> lengthCosts;
};

// The shape of a solution a report should show at least once: its kernel count and whether it
// splits a reduction across the grid (split-K, split-KV) or not.
std::pair<size_t, bool> solutionShape(const Candidate& candidate);

// Best first: lower cost, then lower hash, then lower origin. A total order, so rankings do
// not depend on which thread found what first.
bool betterCandidate(const Candidate& a, const Candidate& b);

// Adds `candidate` to `pool` (best first, one entry per hash), which keeps the `limit` best
// candidates and, beyond them, the best candidate of every solution shape found: a report
// then shows the best one-pass kernel and the best split even where another shape is
// estimated faster (the cost model estimates; --profile measures). Of a dynamic program it
// also keeps the kKeptPerLength cheapest at each ranking length (Candidate::lengthCosts): a
// dispatch needs the tiles that win the long lengths, which a geometric mean over many short
// lengths ranks low. The result does not depend on insertion order.
void keepInPool(std::vector<Candidate>& pool, Candidate candidate, size_t limit);
inline constexpr int kKeptPerLength = 2;

// Whether pool[i] is the best candidate of its solution shape in `pool` (sorted best first).
bool bestOfItsShape(const std::vector<Candidate>& pool, size_t i);

// The order in which to verify `pool` (sorted best first): the positions `first` (a dynamic
// program's cheapest at each ranking length), then, taken in turn, the best of each solution
// shape (so the report shows each) and the best of each other tiling (the kernels' grids and
// occupancies) estimated within kTilingSpread of the best, each list in cost order, then the
// rest. So
// --profile measures different tilings (768 x 3072 in 96, 72, 64, 144 or 192 tiles; a decode
// split into 120 or 128 blocks, with its combine fused) rather than one tiling's consumer and
// cluster choices, even where a program has many shapes; every position once.
std::vector<size_t> verificationOrder(const std::vector<Candidate>& pool,
                                      const std::vector<size_t>& first);
// The model's error between tilings of one kernel family is tens of percent (768 x 3072: 96
// tiles estimated 10.6 us, measured 12.4; 192 tiles 15.5, measured 14.0), not the 10x of an
// unfused attention, which stays behind the fused one's other tilings.
inline constexpr double kTilingSpread = 2.0;

}  // namespace mugraph::search
