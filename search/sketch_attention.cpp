// The attention families (sketches.h): flash attention in one pass over the keys, split-KV
// attention (FlashDecoding) and the rescaling combine that finishes it. A block owns one matrix
// of every batch dim (a head) and a tile of query rows, and walks the keys and values in tiles
// with a running max and rescaled sums (build_block_graph.h makes the online softmax of any
// safe softmax the segment computes).
#include <algorithm>
#include <set>
#include <span>
#include <string>
#include <tuple>

#include "search/sketch_patterns.h"

namespace mugraph::search::sketch {
namespace {

// The general path: one warpgroup of mma.sync warps.
constexpr int kGeneralThreads = 128;
constexpr int64_t kGeneralQueryRows[] = {64, 128};
// Key/value positions per iteration in one pass: 64 or 128; on the general path, where one
// query tile holds every query row (decode), 16 and 32 too, whose small tiles suit short key
// lengths (a 64-key tile over a few positions is mostly padding in shared memory and in the
// multiplies; with a prefill's query tile the larger key tiles win).
constexpr int64_t kKeyTiles[] = {64, 128};
constexpr int64_t kDecodeKeyTiles[] = {16, 32, 64, 128};
// Split-KV: key tiles of whole tensor-core steps (16) between 64 and 128 positions, so a
// context that is no multiple of 128 still gets tiles that nearly fill a split; at most this
// many waves of blocks over the target's multiprocessors (more splits than run at once only
// add partials for the combine to walk).
constexpr int64_t kSplitKeyTileMin = 64;
constexpr int64_t kSplitKeyTileMax = 128;
constexpr int64_t kSplitKeyTileStep = 16;
constexpr int64_t kSplitWaves = 2;
// A query block of decode's few rows (grouped heads) is padded to one tensor-core tile.
constexpr int64_t kSplitQueryRows = 64;
// Decode in one pass with fewer blocks than multiprocessors (a head per block: 8 KV heads on
// 132 SMs): the value columns cut over the grid too, each block walking every key for its
// columns (the scores recomputed per column block; the value tile, the products and the
// stores divided). Column tiles of whole tensor-core steps.
constexpr int64_t kValueColumnParts[] = {2, 4, 8};
constexpr int64_t kValueColumnTileMin = 16;

std::string str(int64_t v) {
  return std::to_string(v);
}

// One block per batch matrix, the query rows in tiles of `rows`.
std::optional<std::vector<GridSplit>> queryBlocks(const Dataflow& flow, const Segment& segment,
                                                  const AttentionVars& vars, int64_t rows) {
  std::vector<GridSplit> grid = oneBlockPerBatch(flow, segment, vars.first.batch);
  if (std::optional<GridSplit> split = tiled(flow, vars.query(), rows)) {
    const std::vector<int> parallel = parallelVars(flow, segment);
    if (std::find(parallel.begin(), parallel.end(), vars.query()) == parallel.end()) {
      return std::nullopt;
    }
    grid.push_back(*split);
  }
  return grid;
}

void addFlash(const Dataflow& flow, const Segment& segment, const AttentionVars& vars, int64_t rows,
              int threads, bool warpgroup, const plan::Target& target,
              std::vector<BlockChoice>& out) {
  const std::optional<std::vector<GridSplit>> grid = queryBlocks(flow, segment, vars, rows);
  if (!grid) return;
  const bool decode = !warpgroup && !tiled(flow, vars.query(), rows);
  const std::span<const int64_t> keyTiles =
      decode ? std::span<const int64_t>(kDecodeKeyTiles) : std::span<const int64_t>(kKeyTiles);
  // Decode's grids with the value columns cut too (kValueColumnParts), where the blocks are
  // fewer than the multiprocessors.
  std::vector<std::pair<std::vector<GridSplit>, int64_t>> grids{{*grid, 1}};
  int64_t blocks = 1;
  for (const GridSplit& g : *grid) blocks *= g.count;
  const int columns = vars.second.n;
  const std::vector<int> parallel = parallelVars(flow, segment);
  if (decode && blocks < target.streamingMultiprocessors &&
      std::find(parallel.begin(), parallel.end(), columns) != parallel.end()) {
    for (int64_t parts : kValueColumnParts) {
      const int64_t extent = flow.vars[columns].extent;
      if (extent % parts != 0 || extent / parts < kValueColumnTileMin ||
          blocks * parts > target.streamingMultiprocessors) {
        continue;
      }
      std::vector<GridSplit> withColumns = *grid;
      withColumns.push_back(GridSplit{columns, parts, 0});
      grids.emplace_back(std::move(withColumns), parts);
    }
  }
  for (const auto& [gridSplits, columnParts] : grids) {
    for (int64_t keys : keyTiles) {
      std::optional<BlockChoice> choice = withGrid(gridSplits);
      if (!choice || !loopInTiles(flow, *choice, vars.keys(), keys)) continue;
      choice->threads = threads;
      choice->sketch = std::string(warpgroup ? "flash_wgmma" : "flash") + "_q" + str(rows) + "_kv" +
                       str(keys) +
                       (warpgroup ? "_c" + str(threads / kWarpgroupThreads - 1) : std::string()) +
                       (columnParts > 1 ? "_v" + str(columnParts) : std::string());
      choice->sketchOnWarpgroupPath = warpgroup;
      out.push_back(std::move(*choice));
    }
  }
}

}  // namespace

std::vector<BlockChoice> flashAttention(const Dataflow& flow, const Segment& segment,
                                        const SearchConfig& config) {
  std::vector<BlockChoice> choices;
  const std::optional<AttentionVars> vars = attentionVars(flow, segment);
  if (!vars) return choices;
  if (config.target->warpgroupMma) {
    for (int consumers : kConsumers) {
      addFlash(flow, segment, *vars, kRowsPerConsumer * consumers,
               kWarpgroupThreads * (consumers + 1), true, *config.target, choices);
    }
  }
  for (int64_t rows : kGeneralQueryRows) {
    addFlash(flow, segment, *vars, rows, kGeneralThreads, false, *config.target, choices);
  }
  return choices;
}

std::vector<BlockChoice> splitKvAttention(const Dataflow& flow, const Segment& segment,
                                          const SearchConfig& config) {
  std::vector<BlockChoice> choices;
  const std::optional<AttentionVars> vars = attentionVars(flow, segment);
  if (!vars || !config.allowGridSplitReduction ||
      !gridSplittableReduction(flow, segment, vars->keys())) {
    return choices;
  }
  const std::optional<std::vector<GridSplit>> grid =
      queryBlocks(flow, segment, *vars, kSplitQueryRows);
  if (!grid) return choices;
  int64_t blocks = 1;
  for (const GridSplit& g : *grid) blocks *= g.count;
  const int64_t maxSplits = kSplitWaves * config.target->streamingMultiprocessors / blocks;
  const int64_t context = flow.vars[vars->keys()].extent;
  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
  for (int64_t tile = kSplitKeyTileMin; tile <= kSplitKeyTileMax; tile += kSplitKeyTileStep) {
    for (int64_t wanted = 2; wanted <= maxSplits; ++wanted) {
      // Iterations per split for about `wanted` splits, then the splits those need.
      const int64_t iterations = (context + wanted * tile - 1) / (wanted * tile);
      const int64_t part = iterations * tile;
      const int64_t splits = (context + part - 1) / part;
      if (splits < 2 || !seen.insert({splits, iterations, tile}).second) continue;
      const bool exact = context % (splits * part) == 0;
      std::vector<GridSplit> withSplit = *grid;
      withSplit.push_back(GridSplit{vars->keys(), splits, exact ? 0 : part});
      std::optional<BlockChoice> choice = withGrid(std::move(withSplit));
      if (!choice) continue;
      choice->reductionSplitVar = vars->keys();
      // A dynamic key length keeps the loop at every reference trip count: its trips follow
      // the length (search/dynamic_choices.h).
      const bool dynamic = flow.vars[vars->keys()].dynamicDim != graph::kStaticDim;
      if (iterations > 1 || dynamic) {
        choice->loopVar = vars->keys();
        choice->forloop = iterations;
        choice->loopTile = exact && !dynamic ? 0 : tile;
      }
      choice->threads = kGeneralThreads;
      choice->sketch = "split_kv_" + str(splits) + "x" + str(iterations) + "x" + str(tile);
      choices.push_back(std::move(*choice));
    }
  }
  return choices;
}

std::vector<BlockChoice> rescalingCombine(const Dataflow& flow, const Segment& segment,
                                          const SearchConfig&) {
  const int partials = rescaledCombineVar(flow, segment);
  if (partials < 0 || !segment.fusable || segment.outputs.empty()) return {};
  // Every row of the result in its own block: the block walks that row's partials.
  std::set<int> rowVars;
  for (int t : segment.outputs) {
    const std::vector<DimLabel>& dims = flow.tensors[t].dims;
    if (!dims.empty() && !dims.back().empty()) rowVars.insert(dims.back().front());
  }
  std::vector<GridSplit> grid;
  for (int v : parallelVars(flow, segment)) {
    if (!rowVars.count(v) && flow.vars[v].extent > 1) {
      grid.push_back(GridSplit{v, flow.vars[v].extent, 0});
    }
  }
  std::optional<BlockChoice> choice = withGrid(std::move(grid));
  if (!choice) return {};
  choice->loopVar = partials;
  choice->forloop = flow.vars[partials].extent;
  choice->threads = kGeneralThreads;
  choice->sketch = "combine_rows";
  return {std::move(*choice)};
}

}  // namespace mugraph::search::sketch
