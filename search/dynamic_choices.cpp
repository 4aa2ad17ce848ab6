#include "search/dynamic_choices.h"

#include <algorithm>
#include <set>

namespace mugraph::search {
namespace {

// The dynamic variables the segment's inputs carry; `buried` is set when one is not the
// outermost variable of its dim (a contiguous tile of it cannot be cut).
std::set<int> dynamicInputVars(const Dataflow& flow, const Segment& segment, bool& buried) {
  std::set<int> vars;
  for (int t : segment.inputs) {
    for (const DimLabel& label : flow.tensors[t].dims) {
      for (size_t i = 0; i < label.size(); ++i) {
        if (flow.vars[label[i]].dynamicDim == graph::kStaticDim) continue;
        vars.insert(label[i]);
        buried = buried || i > 0;
      }
    }
  }
  return vars;
}

}  // namespace

bool declareDynamicTiles(const Dataflow& flow, const Segment& segment, BlockChoice& choice) {
  bool buried = false;
  const std::set<int> vars = dynamicInputVars(flow, segment, buried);
  if (vars.empty()) return true;
  if (buried) return false;
  for (int v : vars) {
    const int64_t extent = flow.vars[v].extent;
    const bool loop = choice.loopVar == v && choice.loops();
    GridSplit* grid = nullptr;
    for (GridSplit& g : choice.grid) {
      if (g.var == v) grid = &g;
    }
    if (!grid && !loop) return false;  // uncut
    if (grid && loop) {
      // Split-KV with fixed parts: the loop's tile is declared, a part is the reference's trips.
      if (choice.reductionSplitVar != v) return false;
      if (choice.loopTile == 0) {
        if (extent % (grid->count * choice.forloop) != 0) return false;
        choice.loopTile = extent / (grid->count * choice.forloop);
      }
      grid->tile = choice.loopTile * choice.forloop;
    } else if (grid) {
      if (choice.reductionSplitVar == v) return false;
      if (grid->tile == 0) grid->tile = extent / grid->count;
    } else if (choice.loopTile == 0) {
      choice.loopTile = extent / choice.forloop;
    }
  }
  return true;
}

void keepLengthIndependent(const Dataflow& flow, const Segment& segment,
                           std::vector<BlockChoice>& choices) {
  std::vector<BlockChoice> kept;
  kept.reserve(choices.size());
  for (BlockChoice& choice : choices) {
    if (declareDynamicTiles(flow, segment, choice)) kept.push_back(std::move(choice));
  }
  choices = std::move(kept);
}

}  // namespace mugraph::search
