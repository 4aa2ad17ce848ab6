// Length-independent block choices for a program with dynamic dims (issue 28). A schedule of
// a dynamic program serves every length of the range, so each block graph fixes its tile
// along every dynamic dim and lets the grid's parts or the loop's trips follow the length
// (graph/dynamic_dims.h). The search is run at the reference length (every dynamic dim at its
// max); this pass turns each choice's cuts of a dynamic variable into declared tiles, so every
// candidate is length-independent by construction, and drops the choices that cannot be:
//  - a dynamic variable of the segment's inputs left uncut (its tile would be the length);
//  - a dynamic variable cut by both the grid and the loop, unless a reduction is split over
//    it (split-KV: the schedule fixes the parts and the loop's tile, the trips follow the
//    length and the parts past its end are empty, graph/tile_splits.h; a dispatch picks the
//    parts per length bucket among the variants);
//  - a grid-split reduction of a dynamic variable without the loop (the partials' count would
//    follow the length).
// A static program's choices pass unchanged.
#pragma once

#include <vector>

#include "search/block_choices.h"
#include "search/dataflow.h"
#include "search/segment.h"

namespace mugraph::search {

// Whether `choice` can be made length-independent for `segment`; if so, declares its tiles
// along the dynamic variables (a divisible split's tile is extent / count).
bool declareDynamicTiles(const Dataflow& flow, const Segment& segment, BlockChoice& choice);

// declareDynamicTiles on every choice, keeping those it accepts (order kept).
void keepLengthIndependent(const Dataflow& flow, const Segment& segment,
                           std::vector<BlockChoice>& choices);

}  // namespace mugraph::search
