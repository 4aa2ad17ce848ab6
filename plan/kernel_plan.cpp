// Planning one block graph for emission (see kernel_plan.h). Decisions are made in the
// order they depend on each other: fusion, tensor-core matmuls, folded accumulators, where
// each tile lives, rescale factors, shared layouts, global copies, then shared-memory offsets.
#include "plan/kernel_plan.h"

#include <algorithm>
#include <set>

#include "graph/error.h"
#include "plan/shared_memory_allocator.h"
#include "plan/warpgroup_mma_plan.h"

namespace mugraph::plan {
namespace {

using graph::DType;
using graph::OpKind;
using graph::TensorId;

bool isSixteenBit(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16;
}

// Largest power of two p <= 8 dividing the number of 16-byte chunks per row, minus one.
int swizzleMaskFor(int64_t cols, DType dtype) {
  const int64_t rowBytes = cols * graph::dtypeBytes(dtype);
  if (rowBytes % 16 != 0) return 0;
  const int64_t chunks = rowBytes / 16;
  int p = 8;
  while (p > 1 && chunks % p != 0) p /= 2;
  return p - 1;
}

void collectGraphFacts(KernelPlan& plan) {
  const graph::BlockGraph& block = *plan.block;
  const size_t tiles = block.tensors.size();
  plan.phases = graph::blockTensorPhases(block);
  plan.producer.assign(tiles, -1);
  plan.consumers.assign(tiles, {});
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (op.output >= 0) plan.producer[op.output] = static_cast<int>(o);
    for (TensorId t : op.inputs) plan.consumers[t].push_back(static_cast<int>(o));
  }
  plan.emitter = plan.producer;
  plan.ops.assign(block.ops.size(), OpPlan{});
  plan.inputs.assign(block.ops.size(), std::nullopt);
  plan.outputs.assign(block.ops.size(), std::nullopt);
  plan.rmsScratch.assign(block.ops.size(), -1);
}

// A recorded fusion group is honored while each fused op has the producer's shape, reads
// only the chain or tiles computed before the producer, and runs where the producer runs (a
// post-loop op on a running tile does not belong in the loop, where accumulators are not
// final yet); the rest of the group (from the first op that does not fit) runs as ordinary
// ops, which computes the same values.
void honorFusion(KernelPlan& plan) {
  const graph::BlockGraph& block = *plan.block;
  for (const graph::FusionGroup& group : block.fusion) {
    // Loaded tiles and accumulators have no element loop to host an epilogue.
    const int host = plan.emitter[group.producer];
    const OpKind hostKind = block.ops[host].kind;
    if (hostKind == OpKind::Input || graph::isAccumulator(hostKind)) continue;
    const graph::Dims& shape = block.tensors[group.producer].shape;
    std::set<TensorId> chain{group.producer};
    for (TensorId t : group.fused) {
      const graph::BlockOp& op = block.ops[plan.producer[t]];
      bool fits = block.tensors[t].shape == shape && graph::isElementwise(op.kind) &&
                  runsInLoop(plan, plan.producer[t]) == runsInLoop(plan, host);
      for (TensorId in : op.inputs) {
        if (chain.count(in)) continue;
        fits = fits && plan.emitter[in] < host;
      }
      if (!fits) break;
      chain.insert(t);
      plan.ops[host].chain.push_back(t);
      plan.ops[plan.producer[t]].emitted = false;
      plan.emitter[t] = host;
    }
  }
}

std::optional<MmaPlan> planMma(const KernelPlan& plan, const graph::BlockOp& op,
                               const std::vector<bool>& transposedInput) {
  const graph::BlockGraph& block = *plan.block;
  const graph::BlockTensor& a = block.tensors[op.inputs[0]];
  const graph::BlockTensor& b = block.tensors[op.inputs[1]];
  if (!isSixteenBit(a.dtype) || a.dtype != b.dtype) return std::nullopt;
  const Extent4 ea = padTo4(a.shape);
  const Extent4 eb = padTo4(b.shape);
  if (ea[0] * ea[1] != 1 || eb[0] * eb[1] != 1) return std::nullopt;
  const int64_t rows = ea[2];
  const int64_t k = ea[3];
  const int64_t n = eb[3];
  // Fewer than 16 rows: one padded fragment row, A read row by row ([M][K], so ldmatrix can
  // repeat its last row for the padding).
  const bool pad = rows < 16 && !transposedInput[op.inputs[0]];
  const int64_t m = pad ? 16 : rows;
  if (m % 16 != 0 || n % 16 != 0 || k % 16 != 0) return std::nullopt;
  const int warps = block.threads / 32;
  std::optional<MmaPlan> best;
  for (int wm = 1; wm <= warps; ++wm) {
    for (int wn = 1; wm * wn <= warps; ++wn) {
      if (m % (wm * 16) != 0 || n % (wn * 16) != 0) continue;
      MmaPlan candidate;
      candidate.warpsM = wm;
      candidate.warpsN = wn;
      candidate.mi = static_cast<int>(m / wm / 16);
      candidate.ni = static_cast<int>(n / wn / 8);
      if (candidate.fragments() > 128) continue;
      const auto score = [](const MmaPlan& p) {
        return std::make_pair(-(p.warpsM * p.warpsN), p.mi * 16 + p.ni * 8);
      };
      if (!best || score(candidate) < score(*best)) best = candidate;
    }
  }
  if (!best) return std::nullopt;
  best->rows = rows;
  best->k = k;
  best->dtype = a.dtype;
  best->aStoredKM = transposedInput[op.inputs[0]];
  best->bStoredKN = !transposedInput[op.inputs[1]];
  return best;
}

bool readInLoop(const KernelPlan& plan, TensorId tile) {
  for (int c : plan.consumers[tile]) {
    if (runsInLoop(plan, c)) return true;
  }
  return false;
}

// An accumulator is folded into the epilogue of the op that computes its input (unless that
// input is a loaded tile, or, for a rescaled sum, that op runs before this iteration's
// factor is written, which happens where its max is updated); behind a tensor-core matmul it
// lives in registers, unless it is a running max read inside the loop: fragments are
// private to their thread, and the loop's other ops need the max in shared memory.
void foldAccumulators(KernelPlan& plan) {
  const graph::BlockGraph& block = *plan.block;
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (!graph::isAccumulator(op.kind)) continue;
    const TensorId in = op.inputs[0];
    const int host = plan.emitter[in];
    if (block.ops[host].kind == OpKind::Input) continue;
    if (op.kind == OpKind::AccumRescaledSum && host <= plan.emitter[op.inputs[1]]) continue;
    plan.ops[o].emitted = false;
    plan.foldedAccumulators.push_back(static_cast<int>(o));
    plan.emitter[op.output] = host;
    if (!plan.ops[host].mma || (op.kind == OpKind::AccumMax && readInLoop(plan, op.output))) {
      continue;
    }
    plan.home[op.output] = TileHome::Registers;
    const bool onlyConsumer = plan.consumers[in].size() == 1 && plan.ops[host].chain.empty();
    if (op.kind != OpKind::AccumMax && in == block.ops[host].output && onlyConsumer) {
      plan.ops[host].accumulateInPlace = true;
    }
  }
}

// Each running max read by a rescaled sum gets a factor array. The max itself is in shared
// memory: the sum is never folded into the op that updates the max, so decideHomes counts
// it as a reader outside that op's epilogue.
void planRescaleFactors(KernelPlan& plan) {
  for (const graph::BlockOp& op : plan.block->ops) {
    if (op.kind != OpKind::AccumRescaledSum) continue;
    const TensorId max = op.inputs[1];
    plan.rescaleFactors[max] = rowMajorTile(plan.block->tensors[max].shape, DType::F32, false);
  }
}

bool readsInRegisters(const KernelPlan& plan, TensorId tile, int consumer) {
  const graph::BlockOp& op = plan.block->ops[consumer];
  if (op.kind == OpKind::Output) return plan.home[tile] == TileHome::Registers;
  if (plan.ops[consumer].emitted) return false;
  // A chain member or folded accumulator reads `tile` inside the same epilogue.
  return plan.emitter[op.output] == plan.emitter[tile];
}

void decideHomes(KernelPlan& plan) {
  const graph::BlockGraph& block = *plan.block;
  for (size_t t = 0; t < block.tensors.size(); ++t) {
    if (plan.home[t] == TileHome::Registers) {
      for (int c : plan.consumers[t]) {
        if (block.ops[c].kind != OpKind::Output) {
          plan.materialized[t] = rowMajorTile(block.tensors[t].shape, DType::F32, false);
        }
      }
      continue;
    }
    bool shared = block.ops[plan.producer[t]].kind == OpKind::Input;
    for (int c : plan.consumers[t]) shared = shared || !readsInRegisters(plan, t, c);
    plan.home[t] = shared ? TileHome::Shared : TileHome::None;
  }
}

void layOutSharedTiles(KernelPlan& plan, const std::vector<bool>& transposedInput) {
  const graph::BlockGraph& block = *plan.block;
  std::vector<bool> mmaOperand(block.tensors.size(), false);
  for (size_t o = 0; o < block.ops.size(); ++o) {
    if (!plan.ops[o].mma) continue;
    for (TensorId t : block.ops[o].inputs) mmaOperand[t] = true;
  }
  for (size_t t = 0; t < block.tensors.size(); ++t) {
    if (plan.home[t] != TileHome::Shared) continue;
    const graph::BlockTensor& tile = block.tensors[t];
    const bool loaded = block.ops[plan.producer[t]].kind == OpKind::Input;
    const DType dtype = loaded || mmaOperand[t] ? tile.dtype : DType::F32;
    SharedTile layout = rowMajorTile(tile.shape, dtype, isSixteenBit(dtype));
    if (transposedInput[t]) {
      layout.transposed = true;
      layout.rows = layout.extent[0] * layout.extent[1] * layout.extent[3];
      layout.cols = layout.extent[2];
      layout.swizzleMask = isSixteenBit(dtype) ? swizzleMaskFor(layout.cols, dtype) : 0;
    }
    plan.shared[t] = layout;
  }
}

// Bytes per copy: the widest of 16, 8, 4 that every row start and every moving offset keeps
// aligned; 0 when none does.
int widestChunk(int64_t rowBytes, const std::vector<int64_t>& byteOffsets) {
  for (int chunk : {16, 8, 4}) {
    bool aligned = rowBytes % chunk == 0;
    for (int64_t offset : byteOffsets) aligned = aligned && offset % chunk == 0;
    if (aligned) return chunk;
  }
  return 0;
}

void planInputCopy(KernelPlan& plan, int opIndex) {
  const graph::BlockGraph& block = *plan.block;
  const graph::BlockOp& op = block.ops[opIndex];
  const graph::TensorDesc& source = plan.graph->tensors[plan.kernel->inputs[op.kernelTensor]];
  const graph::Dims& tileShape = block.tensors[op.output].shape;
  const int pad = graph::kMaxRank - static_cast<int>(tileShape.size());
  const std::vector<int64_t> strides = graph::storageStrides(source.shape, source.layout);
  Extent4 logicalStride{0, 0, 0, 0};
  for (size_t d = 0; d < strides.size(); ++d) logicalStride[pad + d] = strides[d];
  const Extent4 extent = padTo4(tileShape);
  std::array<int, graph::kMaxRank> order{0, 1, 2, 3};
  if (source.layout == graph::Layout::Transposed) std::swap(order[2], order[3]);

  InputCopy copy;
  for (int k = 0; k < graph::kMaxRank; ++k) {
    copy.boxExtent[k] = extent[order[k]];
    copy.globalStride[k] = logicalStride[order[k]];
  }
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    const int dim = op.imap[axis];
    if (block.grid[axis] == 1 || dim == graph::kReplicated) continue;
    copy.blockStep[axis] = plan.splits[op.output][dim].blockTile * strides[dim];
  }
  if (block.forloop > 1 && op.fmap != graph::kReplicated) {
    copy.iterationStep = tileShape[op.fmap] * strides[op.fmap];
    copy.perIteration = true;
  }
  const int64_t elementBytes = graph::dtypeBytes(source.dtype);
  std::vector<int64_t> offsets{copy.iterationStep * elementBytes};
  for (int k = 0; k < 3; ++k) offsets.push_back(copy.globalStride[k] * elementBytes);
  for (int64_t step : copy.blockStep) offsets.push_back(step * elementBytes);
  copy.chunkBytes = widestChunk(copy.boxExtent[3] * elementBytes, offsets);
  copy.async = copy.chunkBytes != 0;
  if (!copy.async) copy.chunkBytes = static_cast<int>(elementBytes);
  if (copy.async && copy.perIteration) plan.shared[op.output].buffers = 2;
  plan.inputs[opIndex] = copy;
}

void planOutputCopy(KernelPlan& plan, int opIndex) {
  const graph::BlockGraph& block = *plan.block;
  const graph::BlockOp& op = block.ops[opIndex];
  const graph::TensorDesc& dest = plan.graph->tensors[plan.kernel->outputs[op.kernelTensor]];
  const graph::Dims& tileShape = block.tensors[op.inputs[0]].shape;
  const int pad = graph::kMaxRank - static_cast<int>(tileShape.size());
  const std::vector<int64_t> strides = graph::storageStrides(dest.shape, graph::Layout::RowMajor);
  OutputCopy copy;
  for (size_t d = 0; d < strides.size(); ++d) copy.globalStride[pad + d] = strides[d];
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (block.grid[axis] == 1) continue;
    const int dim = op.omap[axis];
    const graph::DimSplit& cut = plan.splits[op.inputs[0]][dim];
    copy.blockStep[axis] = (cut.gridAxis == axis ? cut.blockTile : tileShape[dim]) * strides[dim];
  }
  const int64_t elementBytes = graph::dtypeBytes(dest.dtype);
  std::vector<int64_t> offsets;
  for (int k = 0; k < 3; ++k) offsets.push_back(copy.globalStride[k] * elementBytes);
  for (int64_t step : copy.blockStep) offsets.push_back(step * elementBytes);
  const int64_t rowBytes = padTo4(tileShape)[3] * elementBytes;
  copy.chunkBytes = widestChunk(rowBytes, offsets);
  if (copy.chunkBytes < elementBytes) copy.chunkBytes = static_cast<int>(elementBytes);
  plan.outputs[opIndex] = copy;
}

// Enough buffers to keep the target's bytes in flight (at least three, so two iterations'
// copies overlap the compute, at most the target's maximum, at most one per iteration), as
// long as the target's wanted number of blocks still fits on a multiprocessor; never fewer
// than two.
void choosePipelineStages(KernelPlan& plan, const Target& target) {
  int64_t stageBytes = 0;
  for (const SharedTile& tile : plan.shared) {
    if (tile.buffers > 1) stageBytes += tile.bytes;
  }
  if (stageBytes == 0) {
    allocateSharedMemory(plan);
    return;
  }
  const auto useStages = [&](int stages) {
    for (SharedTile& tile : plan.shared) {
      if (tile.buffers > 1) tile.buffers = stages;
    }
    plan.pipelineStages = stages;
    allocateSharedMemory(plan);
  };
  const int64_t wanted =
      std::clamp<int64_t>(1 + (target.bytesInFlightPerBlock + stageBytes - 1) / stageBytes, 3,
                          target.maxPipelineStages);
  const int64_t occupancyBytes = target.sharedBytesForBlocksPerSm(target.wantedBlocksPerSm);
  for (int stages = static_cast<int>(std::min(wanted, plan.block->forloop)); stages > 2; --stages) {
    useStages(stages);
    if (plan.sharedBytes <= occupancyBytes) return;
  }
  useStages(2);
}

// Most elements one thread owns: each is a register per tile kept across the loop.
constexpr int kMaxOwnedPerThread = 8;

// Thread-owned elements (kernel_plan.h) when every compute op is element-wise or an
// accumulator and every tile's extent is, dim by dim, the common extent or 1.
std::optional<ThreadOwnedElements> planThreadOwned(const KernelPlan& plan) {
  const graph::BlockGraph& block = *plan.block;
  ThreadOwnedElements owned;
  for (const graph::BlockOp& op : block.ops) {
    const bool fits = op.kind == OpKind::Input || op.kind == OpKind::Output ||
                      graph::isElementwise(op.kind) || graph::isAccumulator(op.kind);
    if (!fits) return std::nullopt;
  }
  for (const graph::BlockTensor& tile : block.tensors) {
    const Extent4 extent = padTo4(tile.shape);
    for (int d = 0; d < graph::kMaxRank; ++d)
      owned.extent[d] = std::max(owned.extent[d], extent[d]);
  }
  for (const graph::BlockTensor& tile : block.tensors) {
    const Extent4 extent = padTo4(tile.shape);
    for (int d = 0; d < graph::kMaxRank; ++d) {
      if (extent[d] != 1 && extent[d] != owned.extent[d]) return std::nullopt;
    }
  }
  owned.elements = owned.extent[0] * owned.extent[1] * owned.extent[2] * owned.extent[3];
  const int64_t perThread = (owned.elements + block.threads - 1) / block.threads;
  if (perThread > kMaxOwnedPerThread) return std::nullopt;
  owned.perThread = static_cast<int>(perThread);
  return owned;
}

}  // namespace

Extent4 padTo4(const graph::Dims& shape) {
  Extent4 extent{1, 1, 1, 1};
  const size_t pad = graph::kMaxRank - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) extent[pad + d] = shape[d];
  return extent;
}

SharedTile rowMajorTile(const graph::Dims& shape, DType dtype, bool swizzle) {
  SharedTile tile;
  tile.dtype = dtype;
  tile.extent = padTo4(shape);
  tile.cols = tile.extent[3];
  tile.rows = tile.extent[0] * tile.extent[1] * tile.extent[2];
  tile.swizzleMask = swizzle ? swizzleMaskFor(tile.cols, dtype) : 0;
  tile.bytes = tile.rows * tile.cols * graph::dtypeBytes(dtype);
  return tile;
}

KernelPlan planKernel(const graph::KernelGraph& graph, int kernelIndex, const Target& target) {
  KernelPlan plan;
  plan.graph = &graph;
  plan.kernel = &graph.ops.at(kernelIndex);
  if (!plan.kernel->block) {
    throw UserError("kernel " + std::to_string(kernelIndex), "is not a block graph");
  }
  plan.block = &*plan.kernel->block;
  const graph::BlockGraph& block = *plan.block;
  collectGraphFacts(plan);
  std::vector<graph::Dims> inputShapes;
  for (graph::TensorId t : plan.kernel->inputs) inputShapes.push_back(graph.tensors[t].shape);
  plan.splits = graph::blockTileSplits(block, inputShapes);
  plan.partial = graph::hasPartialTiles(plan.splits);
  plan.shortenedLoop = graph::shortenedLoop(plan.splits);
  const size_t tiles = block.tensors.size();
  plan.home.assign(tiles, TileHome::None);
  plan.shared.assign(tiles, SharedTile{});
  plan.materialized.assign(tiles, std::nullopt);
  plan.rescaleFactors.assign(tiles, std::nullopt);

  std::vector<bool> transposedInput(tiles, false);
  for (const graph::BlockOp& op : block.ops) {
    if (op.kind != OpKind::Input) continue;
    const graph::TensorDesc& source = graph.tensors[plan.kernel->inputs[op.kernelTensor]];
    transposedInput[op.output] = source.layout == graph::Layout::Transposed;
  }
  // Partial tiles run on the general path (shared tiles padded, loads and stores masked) or
  // on the warpgroup path (the copy engine zero-fills past a tensor's end, stores masked).
  if (!plan.partial) plan.threadOwned = planThreadOwned(plan);
  if (plan.threadOwned) {
    for (size_t o = 0; o < block.ops.size(); ++o) {
      const graph::BlockOp& op = block.ops[o];
      if (op.kind == OpKind::Input) planInputCopy(plan, static_cast<int>(o));
      if (op.kind == OpKind::Output) planOutputCopy(plan, static_cast<int>(o));
    }
    for (SharedTile& tile : plan.shared) tile.buffers = 1;  // nothing is staged
    plan.minBlocksPerSm = 1;
    return plan;
  }
  plan.warpgroupAttention = planWarpgroupAttention(plan, target);
  if (plan.warpgroupAttention) {
    planOutputCopy(plan, plan.warpgroupAttention->outputOp);
    plan.pipelineStages = plan.warpgroupAttention->stages;
    plan.sharedBytes = plan.warpgroupAttention->sharedBytes;
    plan.minBlocksPerSm = 1;
    return plan;
  }
  plan.warpgroupMma = planWarpgroupMma(plan, target);
  if (plan.warpgroupMma) {
    const WarpgroupMmaPlan& wg = *plan.warpgroupMma;
    planOutputCopy(plan, wg.outputOp);
    plan.pipelineStages = wg.stages;
    plan.sharedBytes = wg.sharedBytes;
    plan.minBlocksPerSm = 1;
    return plan;
  }
  honorFusion(plan);
  for (size_t o = 0; o < block.ops.size(); ++o) {
    if (block.ops[o].kind == OpKind::Matmul) {
      plan.ops[o].mma = planMma(plan, block.ops[o], transposedInput);
    }
  }
  foldAccumulators(plan);
  decideHomes(plan);
  planRescaleFactors(plan);
  layOutSharedTiles(plan, transposedInput);
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (op.kind == OpKind::Input) planInputCopy(plan, static_cast<int>(o));
    if (op.kind == OpKind::Output) planOutputCopy(plan, static_cast<int>(o));
  }
  choosePipelineStages(plan, target);
  // Several blocks per multiprocessor where shared memory allows and registers stay
  // generous: two blocks of at most 256 threads leave 128 registers per thread, which the
  // tiled GEMM fits without spilling.
  const bool severalBlocks =
      block.threads * target.wantedBlocksPerSm <= 512 &&
      plan.sharedBytes <= target.sharedBytesForBlocksPerSm(target.wantedBlocksPerSm);
  plan.minBlocksPerSm = severalBlocks ? target.wantedBlocksPerSm : 1;
  return plan;
}

bool runsInLoop(const KernelPlan& plan, int op) {
  const graph::BlockOp& blockOp = plan.block->ops[op];
  if (blockOp.kind == OpKind::Input || blockOp.kind == OpKind::Output) return false;
  return graph::isAccumulator(blockOp.kind) ||
         plan.phases[blockOp.output] != graph::Phase::PostLoop;
}

std::string launchProblem(const KernelPlan& plan, const Target& target) {
  if (plan.sharedBytes > target.sharedBytesPerBlock) {
    return "needs " + std::to_string(plan.sharedBytes) + " bytes of shared memory; an " +
           target.name + " block can have at most " + std::to_string(target.sharedBytesPerBlock);
  }
  return "";
}

void checkLaunchable(const KernelPlan& plan, const Target& target, const std::string& kernelName) {
  const std::string problem = launchProblem(plan, target);
  if (!problem.empty()) throw UserError("kernel " + kernelName, problem);
}

}  // namespace mugraph::plan
