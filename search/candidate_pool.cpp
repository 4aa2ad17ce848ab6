#include "search/candidate_pool.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace mugraph::search {

std::pair<size_t, bool> solutionShape(const Candidate& candidate) {
  return {candidate.schedule.graph.ops.size(), candidate.gridSplits > 0};
}

bool bestOfItsShape(const std::vector<Candidate>& pool, size_t i) {
  for (size_t j = 0; j < i; ++j) {
    if (solutionShape(pool[j]) == solutionShape(pool[i])) return false;
  }
  return true;
}

namespace {

// Each kernel's grid and occupancy (blocks a multiprocessor runs at once): the same tiles at
// another occupancy run as a different launch, which the model prices no better than tilings.
std::vector<std::array<int64_t, graph::kGridAxes + 1>> kernelGrids(const Candidate& candidate) {
  std::vector<std::array<int64_t, graph::kGridAxes + 1>> grids;
  for (const graph::KernelOp& kernel : candidate.schedule.graph.ops) {
    if (!kernel.block) {
      grids.push_back({0, 0, 0, 0});
      continue;
    }
    const graph::BlockGraph& block = *kernel.block;
    grids.push_back({block.grid[0], block.grid[1], block.grid[2], block.occupancy});
  }
  return grids;
}

bool bestOfItsGrids(const std::vector<Candidate>& pool, size_t i) {
  const auto mine = kernelGrids(pool[i]);
  for (size_t j = 0; j < i; ++j) {
    if (kernelGrids(pool[j]) == mine) return false;
  }
  return true;
}

}  // namespace

std::vector<size_t> verificationOrder(const std::vector<Candidate>& pool,
                                      const std::vector<size_t>& first) {
  std::vector<size_t> order = first;
  std::vector<bool> placed(pool.size(), false);
  for (size_t i : first) placed.at(i) = true;
  std::vector<size_t> shapes, tilings;
  for (size_t i = 0; i < pool.size(); ++i) {
    if (placed[i]) continue;
    if (bestOfItsShape(pool, i)) {
      shapes.push_back(i);
    } else if (bestOfItsGrids(pool, i) && pool[i].cost <= kTilingSpread * pool.front().cost) {
      tilings.push_back(i);
    }
  }
  for (size_t n = 0; n < std::max(shapes.size(), tilings.size()); ++n) {
    for (const std::vector<size_t>* group : {&shapes, &tilings}) {
      if (n < group->size()) {
        order.push_back((*group)[n]);
        placed[(*group)[n]] = true;
      }
    }
  }
  for (size_t i = 0; i < pool.size(); ++i) {
    if (!placed[i]) order.push_back(i);
  }
  return order;
}

namespace {

// Whether pool[i] is among the kKeptPerLength cheapest of the pool at some ranking length
// (ties in the pool's order).
bool amongCheapestAtALength(const std::vector<Candidate>& pool, size_t i) {
  const std::vector<double>& mine = pool[i].lengthCosts;
  for (size_t l = 0; l < mine.size(); ++l) {
    if (!std::isfinite(mine[l])) continue;
    int cheaper = 0;
    for (size_t j = 0; j < pool.size() && cheaper < kKeptPerLength; ++j) {
      if (j == i || pool[j].lengthCosts.size() != mine.size()) continue;
      const double theirs = pool[j].lengthCosts[l];
      if (theirs < mine[l] || (theirs == mine[l] && j < i)) ++cheaper;
    }
    if (cheaper < kKeptPerLength) return true;
  }
  return false;
}

bool keptBeyondTheLimit(const std::vector<Candidate>& pool, size_t i) {
  return bestOfItsShape(pool, i) || amongCheapestAtALength(pool, i);
}

}  // namespace

void keepInPool(std::vector<Candidate>& pool, Candidate candidate, size_t limit) {
  for (size_t i = 0; i < pool.size(); ++i) {
    if (pool[i].hash != candidate.hash) continue;
    if (!betterCandidate(candidate, pool[i])) return;
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  }
  pool.insert(std::lower_bound(pool.begin(), pool.end(), candidate, betterCandidate),
              std::move(candidate));
  // Over the limit: drop the worst candidate kept for neither its shape nor a length.
  while (pool.size() > limit) {
    size_t drop = pool.size() - 1;
    while (drop > 0 && keptBeyondTheLimit(pool, drop)) --drop;
    if (drop == 0 && keptBeyondTheLimit(pool, 0)) break;
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(drop));
  }
}

bool betterCandidate(const Candidate& a, const Candidate& b) {
  if (a.cost != b.cost) return a.cost < b.cost;
  if (a.hash != b.hash) return a.hash < b.hash;
  return a.origin < b.origin;
}

}  // namespace mugraph::search
