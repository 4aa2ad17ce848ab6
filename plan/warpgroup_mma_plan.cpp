// Planning the sm_90 warpgroup path (see warpgroup_mma_plan.h and kernel_plan.h).
#include "plan/warpgroup_mma_plan.h"

#include <algorithm>

namespace mugraph::plan {
namespace {

using graph::DType;
using graph::OpKind;
using graph::TensorId;

constexpr int64_t kBoxElements = 64;     // 128 bytes of 16-bit elements: one swizzled row
constexpr int64_t kMaxBoxRows = 256;     // cuTensorMapEncodeTiled's limit on a box dim
constexpr int64_t kWarpgroupThreads = 128;
constexpr int64_t kWgmmaRows = 64;       // M of one wgmma instruction
constexpr int kMaxAccumulators = 128;    // f32 accumulator registers per consumer thread
constexpr int kProducerRegisters = 40;   // what a copy-issuing warpgroup keeps
constexpr int kMaxConsumerRegisters = 232;
constexpr int64_t kSwizzleAlignment = 1024;  // the 128-byte swizzle pattern's period
constexpr int kMaxStages = 8;
constexpr int64_t kStagingBytesPerWarp = 16 * 128;  // 16 rows of 64 16-bit columns
constexpr int64_t kRasterGroup = 8;  // tiles along grid x walked together by persistent blocks

bool isSixteenBit(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16;
}

int64_t alignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// The tensor map of input op `opIndex`'s device tensor and its box, and the operand's
// layout; nothing when its tile does not fit the boxes. `mn` is the logical dim of the tile
// that is M (operand A) or N (operand B), `kDim` the one that is K.
std::optional<BulkOperand> planOperand(const KernelPlan& plan, int opIndex, int mn, int kDim,
                                       std::vector<TensorMapDesc>& maps) {
  const graph::BlockGraph& block = *plan.block;
  const graph::BlockOp& op = block.ops[opIndex];
  const TensorId tensor = plan.kernel->inputs[op.kernelTensor];
  const graph::TensorDesc& source = plan.graph->tensors[tensor];
  const graph::Dims& tile = block.tensors[op.output].shape;
  const int rank = static_cast<int>(tile.size());
  if (rank != static_cast<int>(source.shape.size()) || rank < 2) return std::nullopt;
  for (int d = 0; d < rank - 2; ++d) {
    if (tile[d] != 1) return std::nullopt;  // one matrix per block
  }
  // Logical dims in storage order, innermost first.
  std::vector<int> order;
  for (int d = rank - 1; d >= 0; --d) order.push_back(d);
  if (source.layout == graph::Layout::Transposed) std::swap(order[0], order[1]);
  const int contiguous = order[0];
  const int64_t elementBytes = graph::dtypeBytes(source.dtype);
  const std::vector<int64_t> strides = graph::storageStrides(source.shape, source.layout);

  BulkOperand operand;
  operand.op = opIndex;
  operand.kMajor = contiguous == kDim;
  const int other = contiguous == kDim ? mn : kDim;
  if (tile[contiguous] % kBoxElements != 0 || tile[other] > kMaxBoxRows ||
      tile[other] % 8 != 0) {
    return std::nullopt;
  }
  operand.rows = tile[other];
  operand.boxes = static_cast<int>(tile[contiguous] / kBoxElements);
  operand.boxBytes = operand.rows * kBoxElements * elementBytes;

  TensorMapDesc map;
  map.tensor = tensor;
  map.dtype = source.dtype;
  map.rank = rank;
  for (int i = 0; i < rank; ++i) {
    const int d = order[i];
    map.dims[i] = source.shape[d];
    map.strideBytes[i] = i == 0 ? elementBytes : strides[d] * elementBytes;
    map.box[i] = i == 0 ? kBoxElements : (d == other ? operand.rows : 1);
    if (i > 0 && map.strideBytes[i] % 16 != 0) return std::nullopt;  // the copy engine's rule
    for (int axis = 0; axis < graph::kGridAxes; ++axis) {
      if (block.grid[axis] > 1 && op.imap[axis] == d) {
        operand.blockStep[i][axis] = source.shape[d] / block.grid[axis];
      }
    }
    if (block.forloop > 1 && op.fmap == d) operand.iterationStep[i] = tile[d];
  }
  operand.map = static_cast<int>(maps.size());
  maps.push_back(map);
  return operand;
}

}  // namespace

std::optional<WarpgroupMmaPlan> planWarpgroupMma(const KernelPlan& plan, const Target& target) {
  if (!target.warpgroupMma) return std::nullopt;
  const graph::BlockGraph& block = *plan.block;
  WarpgroupMmaPlan wg;
  std::vector<int> inputs;
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    const int index = static_cast<int>(o);
    switch (op.kind) {
      case OpKind::Input:
        inputs.push_back(index);
        break;
      case OpKind::Matmul:
        if (wg.matmulOp >= 0) return std::nullopt;
        wg.matmulOp = index;
        break;
      case OpKind::AccumSum:
        if (wg.accumulatorOp >= 0) return std::nullopt;
        wg.accumulatorOp = index;
        break;
      case OpKind::Output:
        if (wg.outputOp >= 0) return std::nullopt;
        wg.outputOp = index;
        break;
      default:
        return std::nullopt;
    }
  }
  if (inputs.size() != 2 || wg.matmulOp < 0 || wg.accumulatorOp < 0 || wg.outputOp < 0) {
    return std::nullopt;
  }
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
  if (wg.n != 64 && wg.n != 128 && wg.n != 256) return std::nullopt;  // the wgmma widths we emit
  if (wg.k % 16 != 0) return std::nullopt;

  if (block.threads % kWarpgroupThreads != 0) return std::nullopt;
  const int warpgroups = static_cast<int>(block.threads / kWarpgroupThreads);
  wg.producer = warpgroups > 1;
  wg.consumers = wg.producer ? warpgroups - 1 : 1;
  if (wg.m % (kWgmmaRows * wg.consumers) != 0) return std::nullopt;
  wg.mTiles = static_cast<int>(wg.m / (kWgmmaRows * wg.consumers));
  if (wg.accumulatorsPerThread() > kMaxAccumulators) return std::nullopt;
  if (wg.producer) {
    wg.producerRegisters = kProducerRegisters;
    const int64_t left = target.registersPerSm - kWarpgroupThreads * kProducerRegisters;
    const int64_t each = left / (kWarpgroupThreads * wg.consumers) / 8 * 8;
    wg.consumerRegisters = static_cast<int>(std::min<int64_t>(kMaxConsumerRegisters, each));
    if (wg.consumerRegisters < wg.accumulatorsPerThread() + 32) return std::nullopt;
  }

  std::optional<BulkOperand> a = planOperand(plan, aOp, rank - 2, rank - 1, wg.maps);
  std::optional<BulkOperand> b = planOperand(plan, bOp, rank - 1, rank - 2, wg.maps);
  if (!a || !b) return std::nullopt;
  // An M-major A is read 64 rows (one box) per wgmma; a K-major operand's rows per box must
  // keep each 8-row group 1024-byte aligned: both hold by the checks above.
  wg.a = *a;
  wg.b = *b;
  wg.a.offset = 0;
  wg.b.offset = alignUp(wg.a.boxBytes * wg.a.boxes, kSwizzleAlignment);
  wg.stageBytes = alignUp(wg.b.offset + wg.b.boxBytes * wg.b.boxes, kSwizzleAlignment);
  const graph::TensorDesc& result =
      plan.graph->tensors[plan.kernel->outputs[output.kernelTensor]];
  const int64_t stagingBytes =
      isSixteenBit(result.dtype) ? wg.consumers * 4 * kStagingBytesPerWarp : 0;
  const int64_t barrierBytes = 2 * 8 * kMaxStages;
  const int64_t available =
      target.sharedBytesPerBlock - barrierBytes - stagingBytes - kSwizzleAlignment;
  const int64_t fit = available / wg.stageBytes;
  wg.stages = static_cast<int>(std::min<int64_t>({fit, kMaxStages, std::max<int64_t>(
                                                                        2, block.forloop)}));
  if (wg.stages < 2) return std::nullopt;
  const int64_t tiles = block.grid[0] * block.grid[1] * block.grid[2];
  wg.launchGrid = block.grid;
  if (wg.producer && tiles > target.streamingMultiprocessors) {
    wg.persistent = true;
    wg.launchGrid = {target.streamingMultiprocessors, 1, 1};
    wg.rasterGroup = static_cast<int>(std::min<int64_t>(kRasterGroup, block.grid[0]));
  }
  wg.barrierOffset = wg.stageBytes * wg.stages;
  int64_t end = wg.barrierOffset + 2 * 8 * wg.stages;
  if (stagingBytes > 0) {
    wg.epilogueOffset = alignUp(end, 128);
    end = wg.epilogueOffset + stagingBytes;
  }
  wg.sharedBytes = end + kSwizzleAlignment;
  return wg;
}

}  // namespace mugraph::plan
