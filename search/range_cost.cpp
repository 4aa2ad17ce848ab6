#include "search/range_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "graph/error.h"

namespace mugraph::search {

std::vector<graph::DimValues> rankingLengths(const graph::KernelGraph& graph) {
  const graph::DimValues reference = graph::referenceValues(graph);
  std::set<graph::DimValues> lengths;
  for (const graph::DynamicDim& dim : graph.dims) {
    std::set<int64_t> values{dim.min, dim.max};
    for (int64_t p = 1; p < dim.max; p *= 2) {
      if (p > dim.min) values.insert(p);
    }
    for (int64_t n : values) {
      graph::DimValues at = reference;
      at[dim.name] = n;
      lengths.insert(std::move(at));
    }
  }
  return {lengths.begin(), lengths.end()};
}

std::vector<double> costOverRange(const graph::Schedule& schedule,
                                  const std::vector<graph::DimValues>& lengths,
                                  const plan::Target& target, const CostConstants& constants) {
  std::vector<double> costs;
  for (const graph::DimValues& values : lengths) {
    try {
      const graph::Schedule at = graph::instantiate(schedule, values);
      costs.push_back(estimateCost(at.graph, target, constants).microseconds);
    } catch (const UserError&) {
      costs.push_back(std::numeric_limits<double>::infinity());
    }
  }
  return costs;
}

std::vector<double> geometricMeanRelativeCost(const std::vector<std::vector<double>>& costs) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> logSum(costs.size(), 0.0);
  int counted = 0;
  const size_t lengths = costs.empty() ? 0 : costs.front().size();
  for (size_t l = 0; l < lengths; ++l) {
    double best = inf;
    for (const std::vector<double>& row : costs) best = std::min(best, row.at(l));
    if (!std::isfinite(best) || best <= 0) continue;
    ++counted;
    for (size_t c = 0; c < costs.size(); ++c) logSum[c] += std::log(costs[c].at(l) / best);
  }
  std::vector<double> score(costs.size(), 1.0);
  if (counted == 0) return score;
  for (size_t c = 0; c < costs.size(); ++c) {
    score[c] = std::isfinite(logSum[c]) ? std::exp(logSum[c] / counted) : inf;
  }
  return score;
}

}  // namespace mugraph::search
