// Block graphs for one fused segment of the program's ops. A choice splits index variables:
// up to three across the grid (each a power-of-two count dividing the variable, or, where none
// divides, ⌈n/t⌉ parts of a power-of-two tile t with a partial last one), at most one
// of them a reduction variable (each block then writes a partial result that a combine op
// sums), one reduction variable across the for-loop, and a thread count. From the choice the
// tiles follow: imap/fmap/omap are the dims carrying the split variables, accumulators sit
// where a reduction crosses the loop, element-wise ops join their producer's register
// epilogue. A max over the loop becomes a running max, and a sum of values shifted by it
// (exp(x − m)) a rescaled sum: one-pass online softmax. Split across the grid, such sums are
// written with their partial max and combined by rescaling. Choices come in a fixed order (variables by id, counts ascending), so each block
// graph is generated once.
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "graph/ir.h"
#include "search/dataflow.h"
#include "search/prune_reasons.h"
#include "search/search_config.h"

namespace mugraph::search {

// Ops [first, last] of a dataflow, with the tensors crossing its boundary.
struct Segment {
  int first = 0, last = 0;
  std::vector<int> inputs;        // read, not produced here; in order of first use
  std::vector<int> outputs;       // produced here and read later (or program outputs)
  bool fusable = true;            // every op may sit in a block graph
  bool worthABlockGraph = false;  // holds a matmul or reduction, or fuses several ops
};

Segment analyzeSegment(const Dataflow& flow, int first, int last);

// A variable cut into `count` parts; `tile` > 0 when the parts do not divide its extent: each
// is `tile` long and the last is partial (graph/tile_splits.h).
struct GridSplit {
  int var = -1;
  int64_t count = 1;
  int64_t tile = 0;
};

struct BlockChoice {
  std::vector<GridSplit> grid;  // axis x, y, z in order; variables by increasing id
  int reductionSplitVar = -1;   // the grid variable that a reduction sums over, or -1
  int loopVar = -1;
  int64_t forloop = 1;
  int64_t loopTile = 0;  // > 0: the loop's tiles do not divide the block's part (partial)
  int threads = 128;
};

std::vector<BlockChoice> enumerateBlockChoices(const Dataflow& flow, const Segment& segment,
                                               const SearchConfig& config);

struct BlockOutput {
  int tensor = -1;      // dataflow tensor
  int partialDim = -1;  // dim the reduction split's blocks are placed along, or -1
  // For a partial sum of values shifted by a partial max (exp(x − m) in a split softmax): the
  // dataflow tensor of that max, written too, so the combine can rescale; else -1.
  int rescaledBy = -1;
  bool readLater = true;  // false: written only for the rescaling combine
};

struct BuiltBlockGraph {
  graph::BlockGraph block;
  std::vector<BlockOutput> outputs;  // in the kernel's output order
};

struct BlockBuildResult {
  std::optional<BuiltBlockGraph> built;
  PruneReason reason = PruneReason::Shape;  // when not built
};

// The block graph of `choice` for `segment`, or why it is invalid. Abstract expressions and
// the plan's fit on the target are checked by the caller (they need the kernel graph).
BlockBuildResult buildBlockGraph(const Dataflow& flow, const Segment& segment,
                                 const BlockChoice& choice);

}  // namespace mugraph::search
