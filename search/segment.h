// A segment is a run of consecutive ops of the dataflow that one kernel computes. What it
// reads and writes, and which of its index variables a block graph may cut: along the grid
// (parallel variables every output carries, or a reduction whose partial results a combine
// can finish) or along the for-loop (reduction variables). Both the enumeration of block
// choices (block_choices.h) and the sketches (sketches.h) ask these questions, and building
// a block graph (build_block_graph.h) needs the segment's boundary.
#pragma once

#include <set>
#include <vector>

#include "search/dataflow.h"

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

// Whether `op` sums (or maxes) over `var`.
bool reduces(const FlowOp& op, int var);

// The segment's inputs and the tensors its ops produce.
std::set<int> segmentTensors(const Dataflow& flow, const Segment& segment);

// Variables the grid may split without a combine: every output carries them (no
// replication), no op reduces them, and none is buried in a composite dim or needed whole.
std::vector<int> parallelVars(const Dataflow& flow, const Segment& segment);

// Variables that some op of the segment reduces over and that can be cut.
std::vector<int> reducedVars(const Dataflow& flow, const Segment& segment);

// Whether the grid may split reduction variable `var`: every output is a reduction over it,
// and nothing inside the segment reads such a partial result, except a partial max: values
// shifted by it may be summed, and those partial sums are combined by rescaling
// (FlashDecoding).
bool gridSplittableReduction(const Dataflow& flow, const Segment& segment, int var);

// The split variable a rescaling combine of the segment reduces, or -1.
int rescaledCombineVar(const Dataflow& flow, const Segment& segment);

}  // namespace mugraph::search
