// The warpgroup GEMM family (sketches.h): one block per BM x BN tile of the result, a for-loop
// of BK-deep steps over the contraction, a copy warpgroup and `consumers` multiplying ones,
// and the element-wise ops that follow the matmul in the segment as its epilogue (a bias, an
// activation, a residual, a gate: plan::isGemmEpilogueOp).
// The plan (plan/warpgroup_mma_plan.cpp) takes such a block graph onto wgmma with bulk tensor
// copies, sizes its ring of stages to the target's shared memory, and makes the blocks
// persistent (walking tiles in raster groups) when there are more tiles than the target's
// multiprocessors run at once (the choice's occupancy: blocks per multiprocessor); a choice the
// plan declines is pruned.
#include <algorithm>
#include <string>

#include "graph/types.h"
#include "plan/paths/warpgroup_mma_plan.h"
#include "search/sketch_patterns.h"
#include "search/sketches.h"

namespace mugraph::search::sketch {
namespace {

// 192 rows: three consumers of 64 (cuBLAS runs 3000^3 in 192 x 192 tiles on an H200).
constexpr int64_t kTileRows[] = {64, 128, 192, 256};
// Result columns of a block: wgmma widths (plan/paths/warpgroup_ring.h) whose tiles split the
// mid-size shapes into about a wave (768 x 3072: 96 tiles of 128 x 192 where 128 x 128 gives
// 144, 12 of them in a second wave).
constexpr int64_t kTileColumns[] = {64, 96, 128, 192, 256};
// One 128-byte swizzled row of 16-bit elements: the box a bulk copy moves along K.
constexpr int64_t kStepK = 64;
// Pairs of blocks in a cluster along grid x (consecutive row tiles, which read the same column
// tile of B) or along y (column tiles, which read the same rows of A): the copy engine
// multicasts the shared tile to both, so each SM asks L2 for half of it. Where rows straddle
// L2 lines the loads bound the kernel and that pays (H200, session 43's sweep: 3000^3 in
// 128 x 192 tiles 128 -> 100 us); where the multiplies bound it, waiting on the other block's
// releases costs a few percent (4096^3: 201 -> 213 us). Clusters of 4 and 8 were slower at
// every point of the sweep (1000^3: 17.8 us against 14.0 in pairs; 4096^3: 296-359 us), so
// pairs only. With two or more consumers: one cannot hide the other block's waits.
constexpr int64_t kClusterBlocks = 2;
constexpr size_t kClusterAxes = 2;  // x and y: the row and column tiles
// Blocks of a small tile that run on one multiprocessor at once, each with its share of the
// shared memory and registers, where there are more tiles than multiprocessors: the last wave
// fills, and one block's first copies and epilogue run under another's multiplies (H200,
// 768 x 3072 x 768 in 64 x 192 tiles: 14.0 us alone, 12.8 two at a time). With no more tiles
// than multiprocessors, blocks doubled up on some leave others idle (1024^3 in 128 tiles of
// 128 x 64: 9.2 us alone, 12.7 two at a time), so none is offered there. Tiles up to
// 128 x 128; the plan declines those whose accumulators do not fit in the launch's share of
// registers (64 x 128 with one consumer fits two blocks to a multiprocessor, not three;
// 64 x 64 fits three).
constexpr int kOccupancies[] = {2, 3};
constexpr int64_t kMostResidentTileElements = 128 * 128;
// Split-K: where a tile shape leaves most multiprocessors idle (M of a few hundred tokens
// against a [4096, 4096] weight: 128 x 256 tiles make 16-64 blocks), the contraction is cut
// across the grid too, into equal parts of whole 64-deep steps, so the blocks fill about one
// wave. Each block writes its partial sums in f32 and a second kernel adds them (the search's
// combine, addCombineOps): it pays where the partials (parts x M x N x 4 bytes, written and
// read again from L2) cost less than the idle multiprocessors, which the cost model judges.
// At least two steps a part, so a block still overlaps its copies with its multiplies.
constexpr int64_t kMinStepsPerPart = 2;

bool sixteenBit(graph::DType dtype) {
  return dtype == graph::DType::F16 || dtype == graph::DType::BF16;
}

// An op the epilogue may run: element-wise, no reduction, no combine of a split.
bool epilogueOp(const FlowOp& op) {
  return plan::isGemmEpilogueOp(op.kind) && op.reducedVars.empty() && !op.rescaledCombine;
}

// Whether the segment is its first op, a matmul, then element-wise ops an epilogue runs (the
// plan decides whether their operands lie along the result tile).
bool matmulWithEpilogue(const Dataflow& flow, const Segment& segment) {
  for (int i = segment.first + 1; i <= segment.last; ++i) {
    if (!epilogueOp(flow.ops[i])) return false;
  }
  return true;
}

// The choice with its contraction cut into `parts` across the grid as well, for each part
// count that keeps the blocks within one wave (sketch name suffix "_k<parts>").
void splitContraction(const Dataflow& flow, const Segment& segment, const SearchConfig& config,
                      const MatmulVars& vars, const BlockChoice& choice, int64_t tiles,
                      std::vector<BlockChoice>& choices) {
  const int64_t sms = config.target->streamingMultiprocessors;
  // Equal parts of whole steps need the depth fixed: a dynamic one is not cut.
  if (!config.allowGridSplitReduction || tiles * 2 > sms ||
      flow.vars[vars.k].dynamicDim != graph::kStaticDim ||
      !gridSplittableReduction(flow, segment, vars.k)) {
    return;
  }
  const int64_t depth = flow.vars[vars.k].extent;
  for (int64_t parts = 2; tiles * parts <= sms; ++parts) {
    if (depth % (parts * kStepK) != 0 || depth / (parts * kStepK) < kMinStepsPerPart) continue;
    std::vector<GridSplit> grid = choice.grid;
    grid.push_back(GridSplit{vars.k, parts, 0});
    std::optional<BlockChoice> split = withGrid(std::move(grid));
    if (!split) continue;
    split->reductionSplitVar = vars.k;
    split->loopVar = vars.k;
    split->forloop = depth / (parts * kStepK);
    split->loopTile = 0;
    split->threads = choice.threads;
    split->sketch = choice.sketch + "_k" + std::to_string(parts);
    split->sketchOnWarpgroupPath = true;
    choices.push_back(std::move(*split));
  }
}

}  // namespace

std::vector<BlockChoice> warpgroupGemm(const Dataflow& flow, const Segment& segment,
                                       const SearchConfig& config) {
  std::vector<BlockChoice> choices;
  if (!config.target->warpgroupMma || !matmulWithEpilogue(flow, segment)) return choices;
  const std::optional<MatmulVars> vars = matmulVars(flow, segment.first);
  if (!vars || vars->m < 0) return choices;  // one row: no warpgroup tile
  for (int t : flow.ops[segment.first].inputs) {
    if (!sixteenBit(flow.tensors[t].desc.dtype)) return choices;
  }
  const std::vector<GridSplit> batch = oneBlockPerBatch(flow, segment, vars->batch);
  for (int consumers : kConsumers) {
    for (int64_t rows : kTileRows) {
      // A tile past the extent is the extent's tile: named by a smaller one, if any fits.
      if (rows % (kRowsPerConsumer * consumers) != 0 || rows > flow.vars[vars->m].extent) {
        continue;
      }
      for (int64_t columns : kTileColumns) {
        if (columns > flow.vars[vars->n].extent) continue;
        std::vector<GridSplit> grid = batch;
        for (const auto& [var, tile] : {std::pair{vars->m, rows}, std::pair{vars->n, columns}}) {
          if (std::optional<GridSplit> split = tiled(flow, var, tile)) grid.push_back(*split);
        }
        std::optional<BlockChoice> choice = withGrid(std::move(grid));
        if (!choice || !loopInTiles(flow, *choice, vars->k, kStepK)) continue;
        choice->threads = kWarpgroupThreads * (consumers + 1);
        choice->sketch = "wgmma_gemm_" + std::to_string(rows) + "x" + std::to_string(columns) +
                         "x" + std::to_string(kStepK) + "_c" + std::to_string(consumers);
        choice->sketchOnWarpgroupPath = true;
        // The plan declines a cluster whose blocks share no tile it can multicast, and one
        // along y in a persistent kernel.
        choices.push_back(*choice);
        int64_t tiles = 1;
        for (const GridSplit& split : choice->grid) tiles *= split.count;
        for (int occupancy : kOccupancies) {
          if (rows * columns > kMostResidentTileElements ||
              tiles <= config.target->streamingMultiprocessors) {
            break;
          }
          BlockChoice resident = *choice;
          resident.occupancy = occupancy;
          resident.sketch += "_o" + std::to_string(occupancy);
          choices.push_back(std::move(resident));
        }
        splitContraction(flow, segment, config, *vars, *choice, tiles, choices);
        if (consumers < 2) continue;
        for (size_t axis = 0; axis < kClusterAxes && axis < choice->grid.size(); ++axis) {
          if (choice->grid[axis].count % kClusterBlocks != 0) continue;
          BlockChoice clustered = *choice;
          clustered.cluster[axis] = kClusterBlocks;
          clustered.sketch += std::string(axis == 0 ? "_x" : "_y") + std::to_string(kClusterBlocks);
          choices.push_back(std::move(clustered));
        }
      }
    }
  }
  return choices;
}

}  // namespace mugraph::search::sketch

namespace mugraph::search {

int lastGemmEpilogueOp(const Dataflow& flow, int first, int maxEpilogueOps) {
  const int ops = static_cast<int>(flow.ops.size());
  if (flow.ops[first].kind != graph::OpKind::Matmul) return first;
  std::vector<int> chain = {flow.ops[first].output};  // the matmul's result and the epilogue's
  int last = first;
  while (last + 1 < ops && last - first < maxEpilogueOps) {
    const FlowOp& op = flow.ops[last + 1];
    const bool readsChain = std::any_of(op.inputs.begin(), op.inputs.end(), [&](int t) {
      return std::find(chain.begin(), chain.end(), t) != chain.end();
    });
    if (!sketch::epilogueOp(op) || !readsChain) break;
    chain.push_back(op.output);
    ++last;
  }
  return last;
}

}  // namespace mugraph::search
