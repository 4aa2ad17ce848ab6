// What the sketches (sketches.h) recognize in a segment, and the pieces every family builds its
// choices from. Internal to the sketches.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "search/block_choices.h"
#include "search/dataflow.h"
#include "search/search_config.h"
#include "search/segment.h"

namespace mugraph::search::sketch {

// The warpgroup paths (GEMM, attention): each consumer warpgroup owns a multiple of one wgmma
// instruction's rows, and a block runs one to three consumers besides its copy warpgroup.
inline constexpr int64_t kRowsPerConsumer = 64;
inline constexpr int kWarpgroupThreads = 128;
inline constexpr int kConsumers[] = {1, 2, 3};

// The index variables of a matmul C[batch..., m, n] = Σ_k A[batch..., m, k]·B[batch..., k, n].
struct MatmulVars {
  int op = -1;  // flow op
  std::vector<int> batch;
  int m = -1, n = -1, k = -1;  // m is -1 where the result has one row
};

// Nothing when a dim of the result is a composite of variables or it has one column.
std::optional<MatmulVars> matmulVars(const Dataflow& flow, int op);

// softmax-like attention: S = Q·K (first), then some chain on S, then O = P·V (second)
// contracting S's columns.
struct AttentionVars {
  MatmulVars first, second;
  int query() const { return first.m; }  // -1: one query row (MHA decode)
  int keys() const { return first.n; }
};

// The segment's two matmuls when the second contracts the first's columns.
std::optional<AttentionVars> attentionVars(const Dataflow& flow, const Segment& segment);

// `var` cut into tiles of `tile` (the last partial where they do not divide); nothing when one
// tile covers it or `var` is -1 (a dim of one).
std::optional<GridSplit> tiled(const Dataflow& flow, int var, int64_t tile);

// Every batch variable cut into single elements (each block one matrix: one head, one batch
// entry), when the segment lets the grid split them.
std::vector<GridSplit> oneBlockPerBatch(const Dataflow& flow, const Segment& segment,
                                        const std::vector<int>& batch);

// A choice of these grid splits (sorted into the canonical variable order), nothing when they
// need more grid axes than there are or an axis beyond its limit.
std::optional<BlockChoice> withGrid(std::vector<GridSplit> grid);

// Sets a for-loop over `var` in tiles of `tile` (the last partial where they do not divide);
// false when it would run once.
bool loopInTiles(const Dataflow& flow, BlockChoice& choice, int var, int64_t tile);

// The families, each in a fixed order.
std::vector<BlockChoice> warpgroupGemm(const Dataflow& flow, const Segment& segment,
                                       const SearchConfig& config);
std::vector<BlockChoice> flashAttention(const Dataflow& flow, const Segment& segment,
                                        const SearchConfig& config);
std::vector<BlockChoice> splitKvAttention(const Dataflow& flow, const Segment& segment,
                                          const SearchConfig& config);
std::vector<BlockChoice> rescalingCombine(const Dataflow& flow, const Segment& segment,
                                          const SearchConfig& config);

}  // namespace mugraph::search::sketch
