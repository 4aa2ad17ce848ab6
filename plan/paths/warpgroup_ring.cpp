// The shared part of the warpgroup paths (see warpgroup_ring.h).
#include "plan/paths/warpgroup_ring.h"

#include <algorithm>

#include "graph/cuda_limits.h"
#include "graph/dynamic_dims.h"
#include "plan/kernel_plan.h"
#include "plan/shared_memory_allocator.h"

namespace mugraph::plan {

namespace {

constexpr int64_t kMbarrierBytes = 8;  // one mbarrier object (a 64-bit word)
constexpr int kSetmaxnregGranule = 8;  // setmaxnreg counts are multiples of 8
// cp.async chunk sizes a gathered operand may use, widest first. 16-byte rows go through the
// copy engine, so gathering starts at 8.
constexpr int64_t kGatherChunks[] = {8, 4};

// The widest cp.async chunk that divides every row stride of `map` and its rows' bytes (so
// that no chunk straddles the tensor's end), or 0.
int gatherChunkBytes(const TensorMapDesc& map) {
  for (int64_t chunk : kGatherChunks) {
    bool fits = map.dims[0] * map.strideBytes[0] % chunk == 0;
    for (int i = 1; i < map.rank; ++i) fits = fits && map.strideBytes[i] % chunk == 0;
    if (fits) return static_cast<int>(chunk);
  }
  return 0;
}

}  // namespace

bool TensorMapDesc::stridesFollowLengths() const {
  for (int i = 1; i < rank; ++i) {
    if (!strideProducts[i].isStatic()) return true;
  }
  return false;
}

int WarpgroupRing::warpsPerWarpgroup() const {
  return limits.threads / graph::kWarpSize;
}

std::optional<BulkOperand> planOperand(const KernelPlan& plan, const WarpgroupLimits& limits,
                                       int opIndex, int mn, int kDim,
                                       std::vector<TensorMapDesc>& maps, bool mayGather,
                                       bool padLastBox) {
  const graph::BlockGraph& block = *plan.block;
  const graph::BlockOp& op = block.ops[opIndex];
  const graph::TensorId tensor = plan.kernel->inputs[op.kernelTensor];
  const graph::TensorDesc& source = plan.graph->tensors[tensor];
  const graph::Dims& tile = block.tensors[op.output].shape;
  const int rank = static_cast<int>(tile.size());
  if (rank != static_cast<int>(source.shape.size()) || rank < 2) return std::nullopt;
  for (int d = 0; d < rank - 2; ++d) {
    if (tile[d] != 1) return std::nullopt;  // one matrix per block
  }
  // Logical dims in storage order, innermost first: the map's dims go in that order, so its
  // strides grow (a heads_transposed [h, s, d] is addressed as d, h, s).
  std::vector<int> order;
  for (int d = rank - 1; d >= 0; --d) order.push_back(d);
  const auto [first, second] = graph::swappedDimsFromEnd(source.layout);
  if (first > rank) return std::nullopt;
  if (first > 0) std::swap(order[first - 1], order[second - 1]);
  const int contiguous = order[0];
  const int64_t elementBytes = graph::dtypeBytes(source.dtype);
  const int64_t boxElements = limits.boxElements(elementBytes);
  const std::vector<int64_t> strides = graph::storageStrides(source.shape, source.layout);
  const std::vector<graph::DimProduct> strideProducts = graph::storageStrideProducts(source);

  BulkOperand operand;
  operand.op = opIndex;
  operand.kMajor = contiguous == kDim;
  const int other = contiguous == kDim ? mn : kDim;
  // A padded last box holds whole wgmma steps of K, or whole 8-column groups of M or N.
  const bool ragged = tile[contiguous] % boxElements != 0;
  const int64_t granule = operand.kMajor ? limits.wgmmaK : 8;
  if ((ragged && (!padLastBox || tile[contiguous] % granule != 0)) ||
      tile[other] > limits.maxBoxRows || tile[other] % 8 != 0) {
    return std::nullopt;
  }
  operand.rows = tile[other];
  operand.boxes = static_cast<int>((tile[contiguous] + boxElements - 1) / boxElements);
  operand.boxBytes = operand.rows * boxElements * elementBytes;

  TensorMapDesc map;
  map.tensor = tensor;
  map.dtype = source.dtype;
  map.rank = rank;
  map.swizzleBytes = static_cast<int>(limits.swizzleRowBytes);
  bool addressable = true;
  for (int i = 0; i < rank; ++i) {
    const int d = order[i];
    map.dims[i] = source.shape[d];
    map.dynamicDims[i] = graph::dynamicDimOf(source, d);
    map.strideBytes[i] = i == 0 ? elementBytes : strides[d] * elementBytes;
    map.strideProducts[i] = strideProducts[d].times(elementBytes);
    // The copy engine's rule holds at every length where the stride's constant factor keeps it.
    if (i > 0 && map.strideProducts[i].coefficient % 16 != 0) addressable = false;
    map.box[i] = i == 0 ? boxElements : (d == other ? operand.rows : 1);
    if (i > 0 && map.strideBytes[i] % 16 != 0) addressable = false;  // the copy engine's rule
    for (int axis = 0; axis < graph::kGridAxes; ++axis) {
      if (block.grid[axis] > 1 && op.imap[axis] == d) {
        // A partial last part reads past the tensor's end: the copy engine fills zeros there.
        operand.blockStep[i][axis] = plan.splits[op.output][d].blockTile;
      }
    }
    if (block.forloop > 1 && op.fmap == d) operand.iterationStep[i] = tile[d];
  }
  operand.view = map;
  for (int i = 1; i < rank; ++i) {
    if (map.box[i] == operand.rows) {
      operand.rowDim = i;
      break;
    }
  }
  if (!addressable) {
    if (ragged) return std::nullopt;  // the padding is the copy engine's
    // Gathered: each copy thread takes every (threads / chunks per row)-th row of a box, so
    // the rows of a box must be a whole number of such steps.
    operand.gatherChunkBytes = mayGather ? gatherChunkBytes(map) : 0;
    const int64_t rowStep =
        limits.threads / (limits.swizzleRowBytes / std::max(1, operand.gatherChunkBytes));
    if (operand.gatherChunkBytes == 0 || operand.rows % rowStep != 0) return std::nullopt;
    return operand;
  }
  operand.map = static_cast<int>(maps.size());
  maps.push_back(map);
  return operand;
}

bool planMulticast(WarpgroupRing& ring, const graph::BlockGraph& block,
                   std::initializer_list<BulkOperand*> operands) {
  const int64_t blocks = block.clusterBlocks();
  if (blocks == 1) return true;
  // Clusters along one grid axis: the operand alike along it is shared.
  int axis = -1;
  for (int a = 0; a < graph::kGridAxes; ++a) {
    if (block.cluster[a] == blocks) axis = a;
  }
  if (axis < 0) return false;
  constexpr int64_t kSwizzleAtomRows = 8;
  for (BulkOperand* operand : operands) {
    bool alike = true;
    for (const auto& step : operand->blockStep) alike = alike && step[axis] == 0;
    if (!alike || operand->map < 0 || operand->rows % (kSwizzleAtomRows * blocks) != 0) continue;
    operand->multicast = static_cast<int>(blocks);
    ring.maps[operand->map].box[operand->rowDim] = operand->rows / blocks;
    ring.clusterBlocks = static_cast<int>(blocks);
    return true;
  }
  return false;
}

void countFillArrivals(WarpgroupRing& ring, std::initializer_list<const BulkOperand*> operands) {
  bool gathered = false, mapped = false;
  for (const BulkOperand* operand : operands) {
    (operand->gatherChunkBytes > 0 ? gathered : mapped) = true;
  }
  ring.fillArrivals = gathered ? ring.limits.threads + (mapped ? 1 : 0) : 1;
}

int64_t layOutStage(std::initializer_list<BulkOperand*> operands, int64_t swizzleAlignment) {
  SharedRegions stage;
  for (BulkOperand* operand : operands) {
    operand->offset = stage.place(operand->boxBytes * operand->boxes, swizzleAlignment);
  }
  return alignUp(stage.end(), swizzleAlignment);
}

int64_t stagingBytesFor(const KernelPlan& plan, const WarpgroupRing& ring, int outputOp) {
  const graph::BlockOp& output = plan.block->ops[outputOp];
  const graph::TensorDesc& result = plan.graph->tensors[plan.kernel->outputs[output.kernelTensor]];
  const bool aligned = result.shape.back() * graph::dtypeBytes(result.dtype) % 16 == 0;
  if (!isSixteenBit(result.dtype) || !aligned) return 0;
  return ring.consumers * ring.warpsPerWarpgroup() * ring.limits.stagingBytesPerWarp;
}

void budgetRegisters(WarpgroupRing& ring, const Target& target) {
  const WarpgroupLimits& limits = ring.limits;
  ring.producerRegisters =
      ring.fillArrivals > 1 ? limits.gatheringProducerRegisters : limits.producerRegisters;
  // setmaxnreg only moves registers between the block's warpgroups: the pool is what the block
  // launched with, each thread's share of the block's part of the register file in whole
  // granules (168 a thread for 384 threads at occupancy 1, not 65536 / 384). A consumer asking
  // for more than the pool holds after the copy warpgroup's release would wait forever.
  const int64_t blockThreads = int64_t{limits.threads} * (ring.consumers + 1);
  const int64_t launched = target.registersPerSm / ring.occupancy / blockThreads /
                           kSetmaxnregGranule * kSetmaxnregGranule;
  ring.launchedRegisters = static_cast<int>(launched);
  const int64_t left = launched * blockThreads - int64_t{limits.threads} * ring.producerRegisters;
  const int64_t each =
      left / (int64_t{limits.threads} * ring.consumers) / kSetmaxnregGranule * kSetmaxnregGranule;
  ring.consumerRegisters = static_cast<int>(std::min<int64_t>(limits.maxConsumerRegisters, each));
}

bool layOutRing(WarpgroupRing& ring, int64_t leadBytes, int extraBarriers, int64_t stagingBytes,
                int64_t wantedStages, const Target& target, bool stagingInLead) {
  const int64_t alignment = ring.limits.swizzleAlignment;
  const int64_t most = std::min<int64_t>(target.maxPipelineStages, wantedStages);
  for (int stages = static_cast<int>(most); stages >= 2; --stages) {
    SharedRegions regions;
    regions.place(leadBytes, alignment);
    ring.stages = stages;
    ring.stagesOffset = regions.place(ring.stageBytes * stages, alignment);
    ring.barrierOffset =
        regions.place(kMbarrierBytes * (2 * stages + extraBarriers), kMbarrierBytes);
    ring.epilogueOffset = stagingBytes <= 0 ? -1
                          : stagingInLead   ? 0
                                            : regions.place(stagingBytes, kSharedTileAlignment);
    // The kernel aligns the dynamic shared memory's base at run time: room for the worst case.
    ring.sharedBytes = regions.end() + alignment;
    if (ring.sharedBytes <= target.sharedBytesForBlocksPerSm(ring.occupancy)) return true;
  }
  return false;
}

}  // namespace mugraph::plan
