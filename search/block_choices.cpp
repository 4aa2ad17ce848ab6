#include "search/block_choices.h"

#include <algorithm>

#include "graph/ir.h"

namespace mugraph::search {
namespace {

// The variables a matmul of the segment reads as M, N or K: their tiles keep tensor-core
// granularity. A segment without a matmul (a norm feeding a GEMM in another kernel) may cut
// the same variables finer.
std::vector<bool> matmulVars(const Dataflow& flow, const Segment& segment) {
  std::vector<bool> matmul(flow.vars.size(), false);
  for (int o = segment.first; o <= segment.last; ++o) {
    const FlowOp& op = flow.ops[o];
    if (op.kind != graph::OpKind::Matmul) continue;
    std::vector<int> tensors = op.inputs;
    tensors.push_back(op.output);
    for (int t : tensors) {
      for (const DimLabel& dim : flow.tensors[t].dims) {
        for (int v : dim) matmul[v] = matmul[v] || flow.vars[v].matmulDim;
      }
    }
  }
  return matmul;
}

// Smallest tile the search gives a variable: tensor-core granularity for matmul dims.
int64_t minimumTile(bool matmulDim, const SearchConfig& config) {
  return matmulDim ? config.minMatmulTile : config.minPartialTile;
}

// Power-of-two counts that divide the extent, then, where a power-of-two tile does not divide
// it, ⌈extent / tile⌉ parts of that tile (the last one partial): tiles chosen for the
// hardware, not for the extent.
std::vector<GridSplit> gridCounts(int varId, const IndexVar& var, bool matmulDim,
                                  const SearchConfig& config) {
  std::vector<GridSplit> counts;
  for (int64_t c = 2; c <= var.extent && c <= config.maxGridPerDim; c *= 2) {
    if (var.extent % c != 0) break;
    if (matmulDim && var.extent / c < config.minMatmulTile) break;
    counts.push_back(GridSplit{varId, c, 0});
  }
  for (int64_t tile = minimumTile(matmulDim, config); 2 * tile <= var.extent; tile *= 2) {
    const int64_t count = (var.extent + tile - 1) / tile;
    if (count > config.maxGridPerDim) continue;
    if (var.extent % tile != 0) {
      counts.push_back(GridSplit{varId, count, tile});
    } else if ((count & (count - 1)) != 0) {
      // A power-of-two tile that divides an extent with an odd factor (11008 = 172 · 64): a
      // count the powers of two above never reach, whose tiles the tensor cores take whole.
      counts.push_back(GridSplit{varId, count, 0});
    }
  }
  return counts;
}

// Depth-first over variables in id order: skip the variable, or split it with each count.
void chooseGrids(const Dataflow& flow, const std::vector<int>& candidates,
                 const std::vector<int>& splitReductions, const std::vector<bool>& matmulDims,
                 const SearchConfig& config, size_t next, BlockChoice& current,
                 std::vector<BlockChoice>& out) {
  if (next == candidates.size()) {
    out.push_back(current);
    return;
  }
  chooseGrids(flow, candidates, splitReductions, matmulDims, config, next + 1, current, out);
  if (current.grid.size() == static_cast<size_t>(graph::kGridAxes)) return;
  const int var = candidates[next];
  const bool isReduction =
      std::find(splitReductions.begin(), splitReductions.end(), var) != splitReductions.end();
  if (isReduction && current.reductionSplitVar >= 0) return;
  // A dynamic dim's part count follows its length: the limit on blocks holds at the range's
  // shortest, where a tile that suits it (16 rows of a GEMV-like projection) is as many parts
  // as the length needs; at the reference length it would be far more than the limit.
  const auto shortest = [&](const GridSplit& g) {
    const IndexVar& v = flow.vars[g.var];
    if (v.dynamicDim == graph::kStaticDim) return g.count;
    const int64_t tile = g.tile > 0 ? g.tile : v.extent / g.count;
    return (v.minExtent + tile - 1) / tile;
  };
  int64_t blocks = 1;
  for (const GridSplit& g : current.grid) blocks *= shortest(g);
  for (const GridSplit& split : gridCounts(var, flow.vars[var], matmulDims[var], config)) {
    if (blocks * shortest(split) > config.maxGridBlocks) continue;
    current.grid.push_back(split);
    if (isReduction) current.reductionSplitVar = var;
    chooseGrids(flow, candidates, splitReductions, matmulDims, config, next + 1, current, out);
    if (isReduction) current.reductionSplitVar = -1;
    current.grid.pop_back();
  }
}

struct LoopChoice {
  int var = -1;
  int64_t trip = 1;
  int64_t tile = 0;  // > 0: declared (partial somewhere)
};

// For-loops over variable v: trips dividing the block's part, and, where the part is the
// whole extent or exactly divided, power-of-two tiles that do not divide it (the last
// iteration partial), as long as the parts stay the grid's.
std::vector<LoopChoice> loopChoices(int v, const IndexVar& var, bool matmulDim,
                                    const GridSplit* grid, const SearchConfig& config) {
  std::vector<LoopChoice> loops;
  const bool partialGrid = grid && grid->tile > 0;
  const int64_t parts = grid ? grid->count : 1;
  const int64_t perBlock = partialGrid ? grid->tile : var.extent / parts;
  const int64_t minTile = minimumTile(matmulDim, config);
  for (int64_t trip : config.forloopCandidates) {
    if (trip <= 1 || perBlock % trip != 0) continue;
    if (matmulDim && perBlock / trip < config.minMatmulTile) continue;
    loops.push_back({v, trip, partialGrid ? perBlock / trip : 0});
  }
  if (partialGrid) return loops;
  const int64_t maxTrip = config.forloopCandidates.empty() ? 1 : config.forloopCandidates.back();
  for (int64_t tile = minTile; 2 * tile <= perBlock; tile *= 2) {
    const int64_t trip = (perBlock + tile - 1) / tile;
    if (perBlock % tile == 0 || trip > maxTrip) continue;
    if ((var.extent + trip * tile - 1) / (trip * tile) != parts) continue;
    loops.push_back({v, trip, tile});
  }
  return loops;
}

}  // namespace

bool BlockChoice::sameSplits(const BlockChoice& other) const {
  return grid == other.grid && reductionSplitVar == other.reductionSplitVar &&
         loopVar == other.loopVar && forloop == other.forloop && loopTile == other.loopTile &&
         threads == other.threads && cluster == other.cluster && occupancy == other.occupancy;
}

const GridSplit* gridSplitOf(const BlockChoice& choice, int var) {
  for (const GridSplit& g : choice.grid) {
    if (g.var == var) return &g;
  }
  return nullptr;
}

std::vector<BlockChoice> enumerateBlockChoices(const Dataflow& flow, const Segment& segment,
                                               const SearchConfig& config) {
  std::vector<BlockChoice> choices;
  if (!segment.fusable || !segment.worthABlockGraph || segment.outputs.empty()) return choices;
  std::vector<int> candidates = parallelVars(flow, segment);
  // A rescaling combine walks the partials in its for-loop, one partial per iteration.
  const int combineVar = rescaledCombineVar(flow, segment);
  const std::vector<int> reductions =
      combineVar >= 0 ? std::vector<int>{combineVar} : reducedVars(flow, segment);
  std::vector<int> splitReductions;
  if (config.allowGridSplitReduction && combineVar < 0) {
    for (int v : reductions) {
      if (gridSplittableReduction(flow, segment, v)) splitReductions.push_back(v);
    }
  }
  candidates.insert(candidates.end(), splitReductions.begin(), splitReductions.end());
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

  const std::vector<bool> matmulDims = matmulVars(flow, segment);
  std::vector<BlockChoice> grids;
  BlockChoice current;
  chooseGrids(flow, candidates, splitReductions, matmulDims, config, 0, current, grids);
  for (const BlockChoice& grid : grids) {
    int64_t blocks = 1;
    for (const GridSplit& g : grid.grid) blocks *= g.count;
    if (blocks < config.minGridBlocks) continue;
    std::vector<LoopChoice> loops = {{-1, 1, 0}};
    if (combineVar >= 0) loops = {{combineVar, flow.vars[combineVar].extent, 0}};
    for (int v : combineVar >= 0 ? std::vector<int>{} : reductions) {
      for (const LoopChoice& loop :
           loopChoices(v, flow.vars[v], matmulDims[v], gridSplitOf(grid, v), config)) {
        loops.push_back(loop);
      }
    }
    for (const LoopChoice& loop : loops) {
      for (int threads : config.threadCandidates) {
        BlockChoice choice = grid;
        choice.loopVar = loop.var;
        choice.forloop = loop.trip;
        choice.loopTile = loop.tile;
        choice.threads = threads;
        choices.push_back(std::move(choice));
      }
    }
  }
  return choices;
}

}  // namespace mugraph::search
