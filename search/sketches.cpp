#include "search/sketches.h"

#include "search/sketch_patterns.h"

namespace mugraph::search {

std::vector<BlockChoice> sketchChoices(const Dataflow& flow, const Segment& segment,
                                       const SearchConfig& config) {
  std::vector<BlockChoice> choices;
  if (!segment.fusable || segment.outputs.empty()) return choices;
  for (const auto family : {sketch::warpgroupGemm, sketch::flashAttention, sketch::splitKvAttention,
                            sketch::rescalingCombine}) {
    for (BlockChoice& choice : family(flow, segment, config)) choices.push_back(std::move(choice));
  }
  return choices;
}

void mergeSketchChoices(std::vector<BlockChoice>& choices, std::vector<BlockChoice> sketched) {
  const size_t generic = choices.size();
  for (BlockChoice& proposal : sketched) {
    bool known = false;
    for (size_t i = 0; i < choices.size() && !known; ++i) {
      if (!choices[i].sameSplits(proposal)) continue;
      known = true;
      if (i < generic && choices[i].sketch.empty()) {
        choices[i].sketch = proposal.sketch;
        choices[i].sketchOnWarpgroupPath = proposal.sketchOnWarpgroupPath;
      }
    }
    if (!known) choices.push_back(std::move(proposal));
  }
}

}  // namespace mugraph::search
