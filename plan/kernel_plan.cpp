// Planning one block graph (see kernel_plan.h): the graph facts and copies every path
// shares, then the first lowering path that takes the block graph (plan/paths/).
#include "plan/kernel_plan.h"

#include <algorithm>
#include <type_traits>

#include "graph/error.h"

namespace mugraph::plan {
namespace {

using graph::OpKind;
using graph::TensorId;

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
  plan.inputs.assign(block.ops.size(), std::nullopt);
  plan.outputs.assign(block.ops.size(), std::nullopt);
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

// Byte offsets for widestChunk: a step that follows a dynamic length keeps only the
// alignment of its constant factor (the length may be odd).
void addByteOffsets(std::vector<int64_t>& offsets, const Stride4& strides, const GridSteps& steps,
                    int64_t elementBytes) {
  for (int k = 0; k < 3; ++k) offsets.push_back(strides[k].coefficient * elementBytes);
  for (const graph::DimProduct& step : steps) offsets.push_back(step.coefficient * elementBytes);
}

void planInputCopy(KernelPlan& plan, int opIndex) {
  const graph::BlockGraph& block = *plan.block;
  const graph::BlockOp& op = block.ops[opIndex];
  const graph::TensorDesc& source = plan.graph->tensors[plan.kernel->inputs[op.kernelTensor]];
  const graph::Dims& tileShape = block.tensors[op.output].shape;
  const int pad = graph::kMaxRank - static_cast<int>(tileShape.size());
  const std::vector<graph::DimProduct> strides = graph::storageStrideProducts(source);
  Stride4 logicalStride{};
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
    const graph::DimSplit& cut = plan.splits[op.output][dim];
    copy.stepPerTrip[axis] = cut.partFollowsLength();
    copy.blockStep[axis] = strides[dim].times(copy.stepPerTrip[axis] ? cut.tile : cut.blockTile);
  }
  if (block.forloop > 1 && op.fmap != graph::kReplicated) {
    copy.iterationStep = strides[op.fmap].times(tileShape[op.fmap]);
    copy.perIteration = true;
  }
  const int64_t elementBytes = graph::dtypeBytes(source.dtype);
  std::vector<int64_t> offsets{copy.iterationStep.coefficient * elementBytes};
  addByteOffsets(offsets, copy.globalStride, copy.blockStep, elementBytes);
  copy.chunkBytes = widestChunk(copy.boxExtent[3] * elementBytes, offsets);
  copy.async = copy.chunkBytes != 0;
  if (!copy.async) copy.chunkBytes = static_cast<int>(elementBytes);
  plan.inputs[opIndex] = copy;
}

void planOutputCopy(KernelPlan& plan, int opIndex) {
  const graph::BlockGraph& block = *plan.block;
  const graph::BlockOp& op = block.ops[opIndex];
  const graph::TensorDesc& dest = plan.graph->tensors[plan.kernel->outputs[op.kernelTensor]];
  const graph::Dims& tileShape = block.tensors[op.inputs[0]].shape;
  const int pad = graph::kMaxRank - static_cast<int>(tileShape.size());
  // Row-major, or an output stored heads_transposed (graph/validate.h): either way its rows
  // are contiguous, and only the strides of the dims above them differ.
  const std::vector<graph::DimProduct> strides = graph::storageStrideProducts(dest);
  OutputCopy copy;
  for (size_t d = 0; d < strides.size(); ++d) copy.globalStride[pad + d] = strides[d];
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (block.grid[axis] == 1) continue;
    const int dim = op.omap[axis];
    const graph::DimSplit& cut = plan.splits[op.inputs[0]][dim];
    copy.blockStep[axis] =
        strides[dim].times(cut.gridAxis == axis ? cut.blockTile : tileShape[dim]);
  }
  const int64_t elementBytes = graph::dtypeBytes(dest.dtype);
  std::vector<int64_t> offsets;
  addByteOffsets(offsets, copy.globalStride, copy.blockStep, elementBytes);
  const int64_t rowBytes = padTo4(tileShape)[3] * elementBytes;
  copy.chunkBytes = widestChunk(rowBytes, offsets);
  if (copy.chunkBytes < elementBytes) copy.chunkBytes = static_cast<int>(elementBytes);
  plan.outputs[opIndex] = copy;
}

void planCopies(KernelPlan& plan, bool inputsToo) {
  for (size_t o = 0; o < plan.block->ops.size(); ++o) {
    const OpKind kind = plan.block->ops[o].kind;
    if (inputsToo && kind == OpKind::Input) planInputCopy(plan, static_cast<int>(o));
    if (kind == OpKind::Output) planOutputCopy(plan, static_cast<int>(o));
  }
}

// The warpgroup paths: the schedule's occupancy, which the ring and the setmaxnreg budgets
// were sized for, is promised to ptxas (setmaxnreg needs that cap).
template <typename Path>
void useWarpgroupPath(KernelPlan& plan, Path path) {
  planCopies(plan, false);
  // The GEMM epilogue's inputs are read from global memory (element by element, at the
  // result's coordinates) as the general path reads its tiles.
  if constexpr (std::is_same_v<Path, WarpgroupMmaPlan>) {
    for (int op : path.epilogueInputs) planInputCopy(plan, op);
  }
  // So are attention's inputs in S's layout, at S's coordinates.
  if constexpr (std::is_same_v<Path, WarpgroupAttentionPlan>) {
    for (int op : path.scoreInputs) planInputCopy(plan, op);
  }
  plan.pipelineStages = path.stages;
  plan.sharedBytes = path.sharedBytes;
  plan.minBlocksPerSm = path.occupancy;
  plan.path = std::move(path);
}

// Whether the warpgroup GEMM plan `wg` of a kernel that takes the lengths runs at every length
// of the range: its tensor maps are encoded at launch from the lengths, a persistent kernel's
// walk counts its tiles from them, and its epilogue masks the last tile's rows with them; but
// clusters, gathered operands, and a trip count or a map stride that follows a length are
// compiled in.
bool takesEveryLength(const KernelPlan& plan, const WarpgroupMmaPlan& wg) {
  if (wg.clusterBlocks > 1 || plan.block->clusterBlocks() > 1) return false;
  if (wg.a.map < 0 || wg.b.map < 0 || !plan.launchCounts->forloop.isStatic()) return false;
  for (const TensorMapDesc& map : wg.maps) {
    // Dim i's stride is the product of dims 0 .. i-1 (dense storage, innermost first).
    for (int i = 0; i + 1 < map.rank; ++i) {
      if (map.dynamicDims[i] != graph::kStaticDim) return false;
    }
  }
  return true;
}

// Whether the warpgroup attention plan `at` of a kernel that takes the lengths runs at every
// length: its tensor maps (dims and strides) are encoded at launch from the lengths, its loop
// runs ⌈s / kv⌉ trips, partial key tiles and the causal diagonal are masked with the lengths
// and its epilogue stops at them; gathered operands, clusters, inputs read in S's layout and a
// causal mask whose query count is fixed while its rows follow a length are not printed from the
// lengths.
bool takesEveryLength(const KernelPlan& plan, const WarpgroupAttentionPlan& at) {
  if (at.clusterBlocks > 1 || plan.block->clusterBlocks() > 1) return false;
  if (at.q.map < 0 || at.k.map < 0 || at.v.map < 0) return false;
  // Inputs read in S's layout are addressed with compiled-in strides and real extents.
  if (!at.scoreInputs.empty()) return false;
  for (const graph::BlockOp& op : plan.block->ops) {
    if (op.kind != OpKind::CausalMask || op.attrs.queries == 0) continue;
    if (plan.splits[op.inputs[0]].end()[-2].dynamicDim != graph::kStaticDim) return false;
  }
  return true;
}

// A kernel that takes the dynamic dims' lengths: a warpgroup path where it can run at every
// length (takesEveryLength), else the general path, whose copies, real extents and loop
// bounds are printed from the lengths (the counts from graph::kernelLaunchCounts).
void planForLengths(KernelPlan& plan, const Target& target) {
  plan.launchCounts = graph::kernelLaunchCounts(*plan.graph, *plan.kernel);
  if (std::optional<WarpgroupAttentionPlan> attention = planWarpgroupAttention(plan, target)) {
    if (takesEveryLength(plan, *attention)) {
      useWarpgroupPath(plan, std::move(*attention));
      return;
    }
  }
  if (std::optional<WarpgroupMmaPlan> gemm = planWarpgroupMma(plan, target)) {
    if (takesEveryLength(plan, *gemm)) {
      // A persistent kernel is launched one block per multiprocessor at every length; its walk
      // over the tiles takes their counts from the lengths (graph::kernelLaunchCounts).
      if (gemm->persistent) {
        for (int axis = 0; axis < graph::kGridAxes; ++axis) {
          plan.launchCounts->grid[axis] = graph::LaunchCount{gemm->launchGrid[axis]};
        }
      }
      useWarpgroupPath(plan, std::move(*gemm));
      return;
    }
  }
  for (const graph::BlockOp& op : plan.block->ops) {
    if (op.kind == OpKind::CausalMask && op.attrs.queries > 0 &&
        plan.splits[op.inputs[0]].end()[-2].dynamicDim != graph::kStaticDim) {
      throw UserError("kernel '" + plan.kernel->name + "'",
                      "has a causal mask of a fixed query count over rows that follow a "
                      "length: a kernel that takes the lengths cannot place it; generate it for "
                      "one length with --dim NAME=N --static");
    }
  }
  planCopies(plan, true);
  planGeneral(plan, target);
}

}  // namespace

const WarpgroupRing* KernelPlan::ring() const {
  if (const WarpgroupMmaPlan* gemm = as<WarpgroupMmaPlan>()) return gemm;
  return as<WarpgroupAttentionPlan>();
}

KernelPlan planKernel(const graph::KernelGraph& graph, int kernelIndex, const Target& target) {
  KernelPlan plan;
  plan.graph = &graph;
  plan.kernel = &graph.ops.at(kernelIndex);
  if (!plan.kernel->block) {
    throw UserError("kernel " + std::to_string(kernelIndex), "is not a block graph");
  }
  plan.block = &*plan.kernel->block;
  collectGraphFacts(plan);
  std::vector<graph::Dims> inputShapes;
  std::vector<std::vector<int>> inputDynamicDims;
  for (graph::TensorId t : plan.kernel->inputs) {
    inputShapes.push_back(graph.tensors[t].shape);
    inputDynamicDims.push_back(graph.tensors[t].dynamicDims);
  }
  // A kernel that reads no dynamic dim (a split's combine over its fixed parts) is planned as a
  // static one: every path is open to it. Planned for the lengths, the combine took the general
  // path: a 16-part split-KV decode cost 19.9 us at s = 1 against the one-pass kernel's 7.4
  // (H200).
  const bool dynamic = std::any_of(
      inputDynamicDims.begin(), inputDynamicDims.end(), [](const std::vector<int>& dims) {
        return std::any_of(dims.begin(), dims.end(), [](int d) { return d != graph::kStaticDim; });
      });
  plan.splits =
      graph::blockTileSplits(*plan.block, inputShapes, dynamic ? &inputDynamicDims : nullptr);
  plan.partial = graph::hasPartialTiles(plan.splits);
  plan.shortenedLoop = graph::shortenedLoop(plan.splits);
  if (dynamic) {
    planForLengths(plan, target);
    return plan;
  }

  // Partial tiles run on the general path (shared tiles padded, loads and stores masked) or
  // on the warpgroup path (the copy engine zero-fills past a tensor's end, stores masked).
  if (!plan.partial) {
    if (std::optional<ThreadOwnedPlan> owned = planThreadOwned(plan)) {
      planCopies(plan, true);
      plan.minBlocksPerSm = 1;
      plan.path = *owned;
      return plan;
    }
    planCopies(plan, true);
    if (std::optional<RowOwnedPlan> rows = planRowOwned(plan)) {
      plan.minBlocksPerSm = 1;
      plan.path = *rows;
      return plan;
    }
    plan.inputs.assign(plan.block->ops.size(), std::nullopt);
    plan.outputs.assign(plan.block->ops.size(), std::nullopt);
  }
  if (std::optional<WarpgroupAttentionPlan> attention = planWarpgroupAttention(plan, target)) {
    useWarpgroupPath(plan, std::move(*attention));
    return plan;
  }
  if (std::optional<WarpgroupMmaPlan> gemm = planWarpgroupMma(plan, target)) {
    useWarpgroupPath(plan, std::move(*gemm));
    return plan;
  }
  planCopies(plan, true);
  planGeneral(plan, target);
  return plan;
}

bool runsInLoop(const KernelPlan& plan, int op) {
  const graph::BlockOp& blockOp = plan.block->ops[op];
  if (blockOp.kind == OpKind::Input || blockOp.kind == OpKind::Output) return false;
  return graph::isAccumulator(blockOp.kind) ||
         plan.phases[blockOp.output] != graph::Phase::PostLoop;
}

std::string launchProblem(const KernelPlan& plan, const Target& target) {
  if (plan.block->clusterBlocks() > target.maxClusterBlocks) {
    return "has clusters of " + std::to_string(plan.block->clusterBlocks()) + " blocks; " +
           target.name + " allows at most " + std::to_string(target.maxClusterBlocks);
  }
  // Only the warpgroup paths size a block for an occupancy; the others choose their own
  // (Target::wantedBlocksPerSm).
  if (plan.block->occupancy > 1 && !plan.ring()) {
    return "has occupancy " + std::to_string(plan.block->occupancy) +
           ": only the warpgroup GEMM and attention paths size a block for it, and this kernel " +
           "takes another path";
  }
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
