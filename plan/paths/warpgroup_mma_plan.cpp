// Planning the sm_90 warpgroup GEMM path (see warpgroup_mma_plan.h).
#include "plan/paths/warpgroup_mma_plan.h"

#include <algorithm>

#include "plan/kernel_plan.h"

namespace mugraph::plan {
namespace {

using graph::OpKind;

// The block graph's matmul, accumulator and output ops and its two inputs, or false where
// the ops are not exactly those.
bool findOps(const graph::BlockGraph& block, WarpgroupMmaPlan& wg, std::vector<int>& inputs) {
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    const int index = static_cast<int>(o);
    switch (op.kind) {
      case OpKind::Input:
        inputs.push_back(index);
        break;
      case OpKind::Matmul:
        if (wg.matmulOp >= 0) return false;
        wg.matmulOp = index;
        break;
      case OpKind::AccumSum:
        if (wg.accumulatorOp >= 0) return false;
        wg.accumulatorOp = index;
        break;
      case OpKind::Output:
        if (wg.outputOp >= 0) return false;
        wg.outputOp = index;
        break;
      default:
        return false;
    }
  }
  return inputs.size() == 2 && wg.matmulOp >= 0 && wg.accumulatorOp >= 0 && wg.outputOp >= 0;
}

}  // namespace

std::optional<WarpgroupMmaPlan> planWarpgroupMma(const KernelPlan& plan, const Target& target) {
  // The persistent ring counts iterations across tiles: every tile must run all of them.
  if (!target.warpgroupMma || plan.shortenedLoop) return std::nullopt;
  const graph::BlockGraph& block = *plan.block;
  WarpgroupMmaPlan wg;
  wg.limits = target.warpgroup;
  const WarpgroupLimits& limits = wg.limits;
  std::vector<int> inputs;
  if (!findOps(block, wg, inputs)) return std::nullopt;
  const graph::BlockOp& matmul = block.ops[wg.matmulOp];
  const graph::BlockOp& accumulator = block.ops[wg.accumulatorOp];
  const graph::BlockOp& output = block.ops[wg.outputOp];
  if (accumulator.inputs[0] != matmul.output || output.inputs[0] != accumulator.output) {
    return std::nullopt;
  }
  const int aOp = plan.producer[matmul.inputs[0]];
  const int bOp = plan.producer[matmul.inputs[1]];
  if (aOp < 0 || bOp < 0 || aOp == bOp || block.ops[aOp].kind != OpKind::Input ||
      block.ops[bOp].kind != OpKind::Input) {
    return std::nullopt;
  }
  const graph::BlockTensor& aTile = block.tensors[matmul.inputs[0]];
  const graph::BlockTensor& bTile = block.tensors[matmul.inputs[1]];
  if (!isSixteenBit(aTile.dtype) || aTile.dtype != bTile.dtype) return std::nullopt;
  const int rank = static_cast<int>(aTile.shape.size());
  if (static_cast<int>(bTile.shape.size()) != rank) return std::nullopt;
  wg.dtype = aTile.dtype;
  wg.m = aTile.shape[rank - 2];
  wg.k = aTile.shape[rank - 1];
  wg.n = bTile.shape[rank - 1];
  if (!isWgmmaWidth(wg.n)) return std::nullopt;
  if (wg.k % 16 != 0) return std::nullopt;

  if (block.threads % limits.threads != 0) return std::nullopt;
  const int warpgroups = static_cast<int>(block.threads / limits.threads);
  wg.producer = warpgroups > 1;
  wg.consumers = wg.producer ? warpgroups - 1 : 1;
  if (wg.m % (limits.wgmmaRows * wg.consumers) != 0) return std::nullopt;
  wg.mTiles = static_cast<int>(wg.m / (limits.wgmmaRows * wg.consumers));
  if (wg.accumulatorsPerThread() > limits.maxAccumulators) return std::nullopt;

  // Rows the copy engine cannot address are gathered by the copy warpgroup, if there is one.
  std::optional<BulkOperand> a =
      planOperand(plan, limits, aOp, rank - 2, rank - 1, wg.maps, wg.producer);
  std::optional<BulkOperand> b =
      planOperand(plan, limits, bOp, rank - 1, rank - 2, wg.maps, wg.producer);
  if (!a || !b) return std::nullopt;
  countFillArrivals(wg, {&*a, &*b});
  // Blocks of a cluster multicast the operand they share (B along x, A along y); the copy
  // warpgroup issues.
  if (block.clusterBlocks() > 1 && (!wg.producer || !planMulticast(wg, block, {&*a, &*b}))) {
    return std::nullopt;
  }
  if (wg.producer) {
    budgetRegisters(wg, target);
    if (wg.consumerRegisters < wg.accumulatorsPerThread() + 32) return std::nullopt;
  }
  // An M-major A is read one box of rows per wgmma; a K-major operand's rows per box must
  // keep each 8-row group swizzle-aligned: both hold by the checks above.
  wg.a = *a;
  wg.b = *b;
  wg.stageBytes = layOutStage({&wg.a, &wg.b}, limits.swizzleAlignment);
  const int64_t stagingBytes = stagingBytesFor(plan, wg, wg.outputOp);
  if (!layOutRing(wg, 0, 0, stagingBytes, std::max<int64_t>(2, block.forloop), target)) {
    return std::nullopt;
  }
  const int64_t tiles = block.grid[0] * block.grid[1] * block.grid[2];
  wg.launchGrid = block.grid;
  // Persistent where the reference extents have more tiles than multiprocessors. A kernel that
  // takes the lengths walks as many tiles as the length gives (the walk's counts follow it;
  // the launch stays one block per multiprocessor, and the blocks past the tiles run none).
  if (wg.producer && tiles > target.streamingMultiprocessors) {
    // The blocks of a cluster walk consecutive tiles, which share their column of tiles (grid
    // x and each raster group hold whole clusters), and the same number of them: clusters
    // along x only.
    const int64_t cluster = wg.clusterBlocks;
    const int64_t group = std::min<int64_t>(limits.rasterGroup, block.grid[0]);
    if (group % cluster != 0 || block.cluster[0] != cluster) return std::nullopt;
    wg.persistent = true;
    wg.launchGrid = {target.streamingMultiprocessors / cluster * cluster, 1, 1};
    wg.rasterGroup = static_cast<int>(group);
  }
  return wg;
}

}  // namespace mugraph::plan
