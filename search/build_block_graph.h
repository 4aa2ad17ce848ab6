// The block graph of one choice (block_choices.h, sketches.h) for a segment. From the choice
// the tiles follow: imap/fmap/omap are the dims carrying the split variables, accumulators sit
// where a reduction crosses the loop, element-wise ops join their producer's register
// epilogue. A max over the loop becomes a running max, and a sum of values shifted by it
// (exp(x − m)) a rescaled sum: one-pass online softmax. Split across the grid, such sums are
// written with their partial max and combined by rescaling.
#pragma once

#include <optional>
#include <vector>

#include "graph/ir.h"
#include "search/block_choices.h"
#include "search/dataflow.h"
#include "search/prune_reasons.h"
#include "search/segment.h"

namespace mugraph::search {

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
