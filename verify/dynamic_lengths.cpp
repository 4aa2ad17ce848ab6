#include "verify/dynamic_lengths.h"

#include <algorithm>
#include <map>

namespace mugraph::verify {
namespace {

using graph::DynamicCut;

// Candidate lengths, each with the case it stands for, of one cut by grid or loop alone with
// tile t: one part (partial, then full), two (the last partial with one element, then full),
// many (three: a middle part that is neither first nor last; partial, then full).
std::vector<std::pair<int64_t, std::string>> singleCutCases(const DynamicCut& cut) {
  const int64_t t = cut.tile;
  const std::string unit = cut.loop ? "iteration" : "part";
  const std::string of =
      " (" + std::string(cut.loop ? "loop" : "grid") + " tile " + std::to_string(t) + ")";
  return {{1, "one " + unit + ", 1 element" + of},
          {t - 1, "one " + unit + ", partial" + of},
          {t, "one " + unit + ", full" + of},
          {t + 1, "two " + unit + "s, the last partial (1 element)" + of},
          {2 * t, "two " + unit + "s, full" + of},
          {3 * t - 1, "many " + unit + "s, the last partial" + of},
          {3 * t, "many " + unit + "s, full" + of}};
}

// A dim cut by both the grid (g parts, fixed) and the loop (tile t): the trip count F is
// ⌈n / (g·t)⌉, and the parts past the elements are empty. Per F of one, two and three: every
// tile full; the last tile partial; the last real part's loop shortened to one iteration of
// one element (F > 1); its last iteration holding one element; the last part empty, the
// others full; and F's shortest length (one element past F − 1 trips: most parts empty).
// A case is kept only at a length whose trip count is F.
std::vector<std::pair<int64_t, std::string>> splitCases(const DynamicCut& cut) {
  const int64_t g = cut.parts;
  const int64_t t = cut.tile;
  const std::string of = " (" + std::to_string(g) + " parts, loop tile " + std::to_string(t) + ")";
  std::vector<std::pair<int64_t, std::string>> cases;
  for (int64_t f = 1; f <= 3; ++f) {
    const std::string trips = std::to_string(f) + " iteration(s)";
    const std::vector<std::pair<int64_t, std::string>> candidates{
        {g * f * t, ", every tile full"},
        {g * f * t - 1, ", the last tile partial"},
        {(g - 1) * f * t + 1, f > 1 ? ", the last part's loop shortened to 1 element"
                                    : ", the last part 1 element"},
        {(g - 1) * f * t + (f - 1) * t + 1, ", the last part's last iteration 1 element"},
        {(g - 1) * f * t, ", the last part empty"},
        {(f - 1) * g * t + 1, ", the shortest length of this trip count"}};
    for (const auto& [n, what] : candidates) {
      if (n >= 1 && graph::cutCounts(cut, n).forloop == f) cases.push_back({n, trips + what + of});
    }
  }
  return cases;
}

// A causal mask over query blocks of `rows` (the grid) and key tiles of `keys` (the loop) of
// one dynamic dim (a prefill over its own tokens): the mask of every query block but the last
// is the same at every length; the last block's last row decides how many key tiles it runs
// and where the diagonal crosses its last one. Per key tile j of the last block, the last row
// at the tile's first column and at its last, for a last block that is the only one and one
// that follows another.
std::vector<std::pair<int64_t, std::string>> causalCases(int64_t rows, int64_t keys) {
  const std::string of = " (causal: query blocks of " + std::to_string(rows) + ", key tiles of " +
                         std::to_string(keys) + ")";
  std::vector<std::pair<int64_t, std::string>> cases;
  for (int64_t block = 0; block < 2; ++block) {
    const std::string which = block == 0 ? "the only query block" : "the second query block";
    for (int64_t j = 0; j * keys < rows; ++j) {
      const int64_t start = block * rows + j * keys;
      const std::string tile = "key tile " + std::to_string(j) + " of " + which;
      cases.push_back({start + 1, "the last row at the first column of " + tile + of});
      cases.push_back({std::min(start + keys, (block + 1) * rows),
                       "the last row at the last column of " + tile + of});
    }
  }
  return cases;
}

bool hasCausalMask(const graph::KernelOp& kernel) {
  if (!kernel.block) return false;
  for (const graph::BlockOp& op : kernel.block->ops) {
    if (op.kind == graph::OpKind::CausalMask) return true;
  }
  return false;
}

}  // namespace

std::vector<LengthCase> lengthsCoveringRange(const graph::KernelGraph& schedule) {
  std::map<graph::DimValues, std::string> chosen;
  const auto add = [&](const graph::DimValues& values, const std::string& why) {
    std::string& reasons = chosen[values];
    if (reasons.find(why) == std::string::npos) reasons += (reasons.empty() ? "" : "; ") + why;
  };
  const graph::DimValues reference = graph::referenceValues(schedule);
  const std::vector<DynamicCut> cuts = graph::dynamicCuts(schedule);
  graph::DimValues allMin;
  for (size_t j = 0; j < schedule.dims.size(); ++j) {
    const graph::DynamicDim& dim = schedule.dims[j];
    allMin[dim.name] = dim.min;
    const auto at = [&](int64_t n) {
      graph::DimValues values = reference;
      values[dim.name] = n;
      return values;
    };
    add(at(dim.min), "the range's min");
    add(at(dim.max), "the range's max");
    for (const DynamicCut& cut : cuts) {
      if (cut.dim != static_cast<int>(j) || cut.tile < 1) continue;
      const bool split = cut.loop && cut.gridAxis != graph::kReplicated;
      for (const auto& [n, why] : split ? splitCases(cut) : singleCutCases(cut)) {
        if (n < dim.min || n > dim.max) continue;
        add(at(n), dim.name + ": " + why);
      }
    }
  }
  // Causal kernels: query blocks by the grid and key tiles by the loop over one dynamic dim.
  for (const graph::KernelOp& kernel : schedule.ops) {
    if (!hasCausalMask(kernel)) continue;
    const std::vector<DynamicCut> kernelCuts = graph::blockDynamicCuts(schedule, kernel);
    for (const DynamicCut& grid : kernelCuts) {
      if (grid.loop || grid.gridAxis == graph::kReplicated || grid.tile < 1) continue;
      for (const DynamicCut& loop : kernelCuts) {
        if (!loop.loop || loop.gridAxis != graph::kReplicated || loop.dim != grid.dim ||
            loop.tile < 1) {
          continue;
        }
        const graph::DynamicDim& dim = schedule.dims.at(grid.dim);
        for (const auto& [n, why] : causalCases(grid.tile, loop.tile)) {
          if (n < dim.min || n > dim.max) continue;
          graph::DimValues values = reference;
          values[dim.name] = n;
          add(values, dim.name + ": " + why);
        }
      }
    }
  }
  if (schedule.dims.size() > 1) add(allMin, "every dim at its min");
  std::vector<LengthCase> lengths;
  for (const auto& [values, why] : chosen) lengths.push_back({values, why});
  return lengths;
}

}  // namespace mugraph::verify
