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
      for (int64_t n : {p, p + p / 2}) {
        if (n > dim.min && n < dim.max) values.insert(n);
      }
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

std::vector<double> kernelCostOverRange(const graph::KernelGraph& graph, int kernelIndex,
                                        const std::vector<graph::DimValues>& lengths,
                                        const plan::Target& target,
                                        const CostConstants& constants) {
  // A partial schedule's graph has no outputs yet, which instantiate's validation refuses:
  // the kernel's own outputs stand for them (no other kernel's cost is asked).
  graph::KernelGraph whole = graph;
  if (whole.outputs.empty()) whole.outputs = whole.ops.at(kernelIndex).outputs;
  std::vector<double> costs;
  for (const graph::DimValues& values : lengths) {
    try {
      const graph::KernelGraph at = graph::instantiate(whole, values);
      costs.push_back(estimateKernelMicroseconds(at, kernelIndex, target, constants));
    } catch (const UserError&) {
      costs.push_back(std::numeric_limits<double>::infinity());
    }
  }
  return costs;
}

namespace {

double geometricMean(const std::vector<double>& costs) {
  double logs = 0;
  for (double c : costs) logs += std::log(c);
  return costs.empty() ? 0 : std::exp(logs / static_cast<double>(costs.size()));
}

}  // namespace

double geometricMeanCostOverRange(const graph::Schedule& schedule, const plan::Target& target,
                                  const CostConstants& constants) {
  return geometricMean(costOverRange(schedule, rankingLengths(schedule.graph), target, constants));
}

double poolCost(const graph::Schedule& schedule, const plan::Target& target,
                std::vector<double>* atLengths) {
  if (schedule.graph.dims.empty()) {
    if (atLengths) atLengths->clear();
    return estimateCost(schedule.graph, target).microseconds;
  }
  std::vector<double> costs =
      costOverRange(schedule, rankingLengths(schedule.graph), target, calibratedConstants());
  const double mean = geometricMean(costs);
  if (atLengths) *atLengths = std::move(costs);
  return mean;
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

std::vector<LengthBucket> lengthBuckets(const std::vector<int64_t>& lengths, int64_t dimMin,
                                        const std::vector<std::vector<double>>& costs,
                                        double margin) {
  std::vector<LengthBucket> buckets;
  if (costs.empty()) return buckets;
  int64_t from = dimMin;
  for (size_t l = 0; l < lengths.size(); ++l) {
    int best = -1;
    for (size_t v = 0; v < costs.size(); ++v) {
      const double c = costs[v].at(l);
      if (std::isfinite(c) && (best < 0 || c < costs[static_cast<size_t>(best)][l])) {
        best = static_cast<int>(v);
      }
    }
    const int64_t to = lengths[l];
    if (best >= 0) {
      // Within the margin of the fastest, the previous bucket's variant goes on (a switch must
      // save the margin), else the first-ranked one is taken.
      const double fastest = costs[static_cast<size_t>(best)][l];
      const auto near = [&](int v) {
        const double c = costs[static_cast<size_t>(v)][l];
        return std::isfinite(c) && c <= fastest * (1.0 + margin);
      };
      const bool continues = !buckets.empty() && buckets.back().max + 1 == from;
      if (continues && near(buckets.back().variant)) {
        best = buckets.back().variant;
      } else if (near(0)) {
        best = 0;
      }
      const double at = costs[static_cast<size_t>(best)][l];
      if (!buckets.empty() && buckets.back().variant == best && buckets.back().max + 1 == from) {
        buckets.back().max = to;
        buckets.back().microseconds = at;
      } else {
        buckets.push_back({from, to, best, at});
      }
    }
    from = to + 1;
  }
  return buckets;
}

std::vector<size_t> cheapestAtEachLength(const std::vector<std::vector<double>>& costs,
                                         int rounds) {
  const size_t lengths = costs.empty() ? 0 : costs.front().size();
  // The best finite cost at each length, and what a set of candidates loses against it: the
  // sum over lengths of the log of its cheapest member's cost over the best (a length none of
  // them can run at costs as much as a billion times the best).
  std::vector<double> best(lengths, std::numeric_limits<double>::infinity());
  for (const std::vector<double>& row : costs) {
    for (size_t l = 0; l < lengths; ++l) best[l] = std::min(best[l], row[l]);
  }
  constexpr double kUnservedLog = 20.7;  // log(1e9)
  std::vector<double> served(lengths, std::numeric_limits<double>::infinity());
  const auto loss = [&](const std::vector<double>& cheapest) {
    double sum = 0;
    for (size_t l = 0; l < lengths; ++l) {
      if (!std::isfinite(best[l])) continue;
      sum += std::isfinite(cheapest[l]) ? std::log(cheapest[l] / best[l]) : kUnservedLog;
    }
    return sum;
  };
  std::vector<size_t> order;
  std::set<size_t> taken;
  for (int round = 0; round < rounds; ++round) {
    // This round's candidates: each length's cheapest not taken in an earlier round, in the
    // order of the lengths they win first.
    std::vector<size_t> members;
    for (size_t l = 0; l < lengths; ++l) {
      size_t cheapest = costs.size();
      for (size_t c = 0; c < costs.size(); ++c) {
        if (taken.count(c) || !std::isfinite(costs[c][l])) continue;
        if (cheapest == costs.size() || costs[c][l] < costs[cheapest][l]) cheapest = c;
      }
      if (cheapest < costs.size() &&
          std::find(members.begin(), members.end(), cheapest) == members.end()) {
        members.push_back(cheapest);
      }
    }
    // Taken greedily: next, the one that leaves the taken set losing least (the first in
    // length order on a tie), so a verification cut short still covers the whole range.
    while (!members.empty()) {
      size_t pick = 0;
      double pickLoss = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < members.size(); ++i) {
        std::vector<double> with = served;
        for (size_t l = 0; l < lengths; ++l) with[l] = std::min(with[l], costs[members[i]][l]);
        const double candidateLoss = loss(with);
        if (candidateLoss < pickLoss) {
          pick = i;
          pickLoss = candidateLoss;
        }
      }
      const size_t c = members[pick];
      for (size_t l = 0; l < lengths; ++l) served[l] = std::min(served[l], costs[c][l]);
      taken.insert(c);
      order.push_back(c);
      members.erase(members.begin() + static_cast<std::ptrdiff_t>(pick));
    }
  }
  return order;
}

}  // namespace mugraph::search
