// Sketches: the kernel families known to be fast, as rules inside the search space (the way
// TVM MetaSchedule keeps its tensor-core tiling rule). A sketch recognizes a segment by its
// structure and proposes a small parametric family of block choices for it:
//
//  - warpgroup GEMM (a segment that is one matmul of 16-bit operands, on a target with
//    warpgroup MMA): output tile BM x BN, K step BK, consumer warpgroups (threads = a copy
//    warpgroup and the multiplying ones); batch dims one per block;
//  - flash attention (two matmuls, the second contracting the first's columns: softmax(Q·K)·V
//    in any written form): query rows per block (64 per consumer warpgroup on the warpgroup
//    path, or the general path's 128 threads), key/value positions per iteration; in decode
//    with fewer blocks than multiprocessors, the value columns cut over the grid too (2, 4 or
//    8 parts: each block walks every key for its columns);
//  - split-KV attention (the same, where the grid may split the key positions): splits, key
//    positions per iteration and iterations per split, the splits filling at most a few
//    waves of the target's multiprocessors; and the rescaling combine that finishes it, one
//    row of partials per block.
//
// Sizes no tile divides get partial tiles (graph/tile_splits.h), never a case per shape. The
// proposals join the generic choices (block_choices.h): built, pruned, planned, costed,
// verified and ranked like them. Every decision is in the block graph (grid, threads,
// for-loop, declared tiles) and the family is the kernel's name in the schedule. What the
// plan derives from the target (pipeline stages, persistent blocks and their raster order on
// the warpgroup GEMM) follows from those decisions and `plan::Target`, so the schedule
// determines it too.
#pragma once

#include <vector>

#include "search/block_choices.h"
#include "search/dataflow.h"
#include "search/search_config.h"
#include "search/segment.h"

namespace mugraph::search {

// Every sketch's proposals for `segment`, in a fixed order.
std::vector<BlockChoice> sketchChoices(const Dataflow& flow, const Segment& segment,
                                       const SearchConfig& config);

// The last op of the longest segment the warpgroup GEMM family takes from the matmul at
// `first`: the element-wise ops after it, each reading the matmul's result or an earlier one
// of them, up to `maxEpilogueOps`, run in registers as its epilogue (a bias and GELU's tanh form
// are ten ops, a norm's scale and shift or a residual fewer). `first` when it is no matmul or
// nothing follows. The enumerator offers the segments longer than maxBlockOps up to it to the
// sketches alone: an epilogue adds no choice of its own, where the generic block choices of a long
// segment multiply.
int lastGemmEpilogueOp(const Dataflow& flow, int first, int maxEpilogueOps);

// Adds `sketched` to `choices`: a proposal equal to a generic choice names it (the generic
// choice keeps its own pruning), any other is appended.
void mergeSketchChoices(std::vector<BlockChoice>& choices, std::vector<BlockChoice> sketched);

}  // namespace mugraph::search
