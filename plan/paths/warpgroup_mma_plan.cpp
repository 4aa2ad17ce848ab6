// Planning the sm_90 warpgroup GEMM path (see warpgroup_mma_plan.h).
#include "plan/paths/warpgroup_mma_plan.h"

#include <algorithm>

#include "plan/kernel_plan.h"

namespace mugraph::plan {
namespace {

using graph::OpKind;

// The block graph's matmul, accumulator, epilogue and output ops and its inputs, or false
// where another op is there or one of these twice.
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
        if (!isGemmEpilogueOp(op.kind)) return false;
        wg.epilogueOps.push_back(index);
    }
  }
  return wg.matmulOp >= 0 && wg.accumulatorOp >= 0 && wg.outputOp >= 0;
}

// Whether `tile` is the result tile `result` or broadcast along it: the same rank, leading
// (batch) dims 1, each of the last two the result's or 1.
bool alongResult(const graph::Dims& tile, const graph::Dims& result) {
  if (tile.size() != result.size() || tile.size() < 2) return false;
  for (size_t d = 0; d < tile.size(); ++d) {
    const bool last2 = d + 2 >= tile.size();
    if (tile[d] != 1 && (!last2 || tile[d] != result[d])) return false;
  }
  return true;
}

// Checks the epilogue (WarpgroupMmaPlan::epilogueOps) and sorts the inputs other than the
// matmul's operands into epilogue inputs: each op reads the accumulator, an earlier epilogue
// op or an input loaded once, all along the result tile, and the output stores the
// accumulator or the last epilogue op, of the result's own shape.
bool planEpilogue(const KernelPlan& plan, WarpgroupMmaPlan& wg, const std::vector<int>& inputs,
                  int aOp, int bOp) {
  const graph::BlockGraph& block = *plan.block;
  const graph::BlockOp& accumulator = block.ops[wg.accumulatorOp];
  const graph::Dims& result = block.tensors[accumulator.output].shape;
  std::vector<bool> available(block.tensors.size(), false);
  available[accumulator.output] = true;
  for (int o : inputs) {
    if (o == aOp || o == bOp) continue;
    const graph::BlockOp& input = block.ops[o];
    if (input.fmap != graph::kReplicated ||
        !alongResult(block.tensors[input.output].shape, result)) {
      return false;
    }
    wg.epilogueInputs.push_back(o);
    available[input.output] = true;
  }
  for (int o : wg.epilogueOps) {
    const graph::BlockOp& op = block.ops[o];
    for (graph::TensorId operand : op.inputs) {
      if (!available[operand]) return false;
    }
    if (!alongResult(block.tensors[op.output].shape, result)) return false;
    available[op.output] = true;
  }
  // What the loop and the epilogue make is read by nothing else.
  const graph::TensorId stored = block.ops[wg.outputOp].inputs[0];
  const graph::TensorId last =
      wg.epilogueOps.empty() ? accumulator.output : block.ops[wg.epilogueOps.back()].output;
  if (stored != last || block.tensors[stored].shape != result) return false;
  for (int o : inputs) {
    if (o == aOp || o == bOp) continue;
    for (int consumer : plan.consumers[block.ops[o].output]) {
      if (block.ops[consumer].kind == OpKind::Matmul) return false;
    }
  }
  return true;
}

}  // namespace

bool isGemmEpilogueOp(graph::OpKind kind) {
  return graph::isElementwise(kind) && kind != OpKind::CausalMask;
}

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
  if (accumulator.inputs[0] != matmul.output) return std::nullopt;
  const int aOp = plan.producer[matmul.inputs[0]];
  const int bOp = plan.producer[matmul.inputs[1]];
  if (aOp < 0 || bOp < 0 || aOp == bOp || block.ops[aOp].kind != OpKind::Input ||
      block.ops[bOp].kind != OpKind::Input) {
    return std::nullopt;
  }
  if (!planEpilogue(plan, wg, inputs, aOp, bOp)) return std::nullopt;
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
  wg.occupancy = block.occupancy;
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
    const int compiled = std::min(wg.consumerRegisters, wg.launchedRegisters);
    if (compiled < wg.accumulatorsPerThread() + 32) return std::nullopt;
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
  // Persistent where the reference extents have more tiles than the multiprocessors run at
  // once (occupancy blocks each). A kernel that takes the lengths walks as many tiles as the
  // length gives (the walk's counts follow it; the launch stays `occupancy` blocks per
  // multiprocessor, and the blocks past the tiles run none).
  const int64_t resident = target.streamingMultiprocessors * wg.occupancy;
  if (wg.producer && tiles > resident) {
    // The blocks of a cluster walk consecutive tiles, which share their column of tiles (grid
    // x and each raster group hold whole clusters), and the same number of them: clusters
    // along x only.
    const int64_t cluster = wg.clusterBlocks;
    const int64_t group = std::min<int64_t>(limits.rasterGroup, block.grid[0]);
    if (group % cluster != 0 || block.cluster[0] != cluster) return std::nullopt;
    wg.persistent = true;
    wg.launchGrid = {resident / cluster * cluster, 1, 1};
    wg.rasterGroup = static_cast<int>(group);
  }
  return wg;
}

}  // namespace mugraph::plan
