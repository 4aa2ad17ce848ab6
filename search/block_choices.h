// The choices that make a block graph of one segment, enumerated generically. A choice
// splits index variables: up to three across the grid (each a power-of-two count dividing the
// variable; n/t parts of a power-of-two tile t that divides it where that count is no power
// of two, 11008 = 172 · 64; or, where t does not divide it, ⌈n/t⌉ parts with a partial last
// one), at most one of them a reduction variable (each block then writes a partial result
// that a combine op sums), one reduction variable across the for-loop, and a thread count.
// Choices come in a fixed order (variables by id, counts ascending), so each block graph is
// generated once. Building the block graph of a choice is build_block_graph.h; the known-fast
// families add their own choices (sketches.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "search/dataflow.h"
#include "search/search_config.h"
#include "search/segment.h"

namespace mugraph::search {

// A variable cut into `count` parts; `tile` > 0 when the parts do not divide its extent: each
// is `tile` long and the last is partial (graph/tile_splits.h).
struct GridSplit {
  int var = -1;
  int64_t count = 1;
  int64_t tile = 0;
  bool operator==(const GridSplit&) const = default;
};

struct BlockChoice {
  std::vector<GridSplit> grid;  // axis x, y, z in order; variables by increasing id
  int reductionSplitVar = -1;   // the grid variable that a reduction sums over, or -1
  int loopVar = -1;
  int64_t forloop = 1;
  int64_t loopTile = 0;  // > 0: the loop's tiles do not divide the block's part (partial)
  int threads = 128;
  // Thread-block clusters per grid axis (graph::BlockGraph::cluster): 1, or blocks a sketch
  // groups so that they multicast the tile they share.
  std::array<int64_t, graph::kGridAxes> cluster{1, 1, 1};
  int occupancy = 1;  // blocks one multiprocessor runs at once (graph::BlockGraph::occupancy)
  // Named by a sketch (sketches.h): its family and decisions, e.g. "wgmma_gemm_128x256x64_c2",
  // which become the kernel's name in the schedule; empty otherwise.
  std::string sketch;
  // The sketch's family is a warpgroup path's: its name applies only where the plan puts the
  // block graph there, and a choice only the sketch proposed is pruned elsewhere.
  bool sketchOnWarpgroupPath = false;
  bool generic = true;  // enumerated by enumerateBlockChoices (its pruning applies)

  // Same block graph (the sketch's name aside).
  bool sameSplits(const BlockChoice& other) const;
  // The for-loop cuts loopVar: more than one trip, or a declared tile (a dynamic dim's trips
  // follow its length, so one trip at the reference still loops).
  bool loops() const { return loopVar >= 0 && (forloop > 1 || loopTile > 0); }
};

std::vector<BlockChoice> enumerateBlockChoices(const Dataflow& flow, const Segment& segment,
                                               const SearchConfig& config);

// The grid split of `var` in `choice`, or null.
const GridSplit* gridSplitOf(const BlockChoice& choice, int var);

}  // namespace mugraph::search
