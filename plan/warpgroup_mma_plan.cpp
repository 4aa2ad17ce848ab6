// Planning the sm_90 warpgroup path (see warpgroup_mma_plan.h and kernel_plan.h).
#include "plan/warpgroup_mma_plan.h"

#include <algorithm>

namespace mugraph::plan {
namespace {

using graph::DType;
using graph::OpKind;
using graph::TensorId;

constexpr int64_t kBoxElements = 64;  // 128 bytes of 16-bit elements: one swizzled row
constexpr int64_t kMaxBoxRows = 256;  // cuTensorMapEncodeTiled's limit on a box dim
constexpr int64_t kWarpgroupThreads = 128;
constexpr int64_t kWgmmaRows = 64;      // M of one wgmma instruction
constexpr int kMaxAccumulators = 128;   // f32 accumulator registers per consumer thread
constexpr int kProducerRegisters = 40;  // what a copy-issuing warpgroup keeps
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
  if (tile[contiguous] % kBoxElements != 0 || tile[other] > kMaxBoxRows || tile[other] % 8 != 0) {
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
        // A partial last part reads past the tensor's end: the copy engine fills zeros there.
        operand.blockStep[i][axis] = plan.splits[op.output][d].blockTile;
      }
    }
    if (block.forloop > 1 && op.fmap == d) operand.iterationStep[i] = tile[d];
  }
  operand.map = static_cast<int>(maps.size());
  maps.push_back(map);
  return operand;
}

// Bytes of the staging buffers for output op `outputOp`'s epilogue: 16-bit results whose
// rows start 16-byte aligned leave through them in 16-byte stores (WarpgroupMmaPlan); others
// are stored from registers.
int64_t stagingBytesFor(const KernelPlan& plan, int outputOp, int consumers) {
  const graph::BlockOp& output = plan.block->ops[outputOp];
  const graph::TensorDesc& result = plan.graph->tensors[plan.kernel->outputs[output.kernelTensor]];
  const bool aligned = result.shape.back() * graph::dtypeBytes(result.dtype) % 16 == 0;
  return isSixteenBit(result.dtype) && aligned ? consumers * 4 * kStagingBytesPerWarp : 0;
}

}  // namespace

std::optional<WarpgroupMmaPlan> planWarpgroupMma(const KernelPlan& plan, const Target& target) {
  // The persistent ring counts iterations across tiles: every tile must run all of them.
  if (!target.warpgroupMma || plan.shortenedLoop) return std::nullopt;
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
  const int64_t stagingBytes = stagingBytesFor(plan, wg.outputOp, wg.consumers);
  const int64_t barrierBytes = 2 * 8 * kMaxStages;
  const int64_t available =
      target.sharedBytesPerBlock - barrierBytes - stagingBytes - kSwizzleAlignment;
  const int64_t fit = available / wg.stageBytes;
  wg.stages =
      static_cast<int>(std::min<int64_t>({fit, kMaxStages, std::max<int64_t>(2, block.forloop)}));
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

namespace mugraph::plan {
namespace {

using graph::OpKind;
using graph::TensorId;

// The roles of every tile of an attention-shaped block graph (WarpgroupAttentionPlan), or
// nothing where an op does not fit them.
std::optional<std::vector<FragmentRole>> attentionRoles(const KernelPlan& plan, int first,
                                                        int second) {
  const graph::BlockGraph& block = *plan.block;
  std::vector<FragmentRole> roles(block.tensors.size(), FragmentRole::None);
  const int last = static_cast<int>(block.tensors[block.ops[first].output].shape.size()) - 1;
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    const int index = static_cast<int>(o);
    if (op.kind == OpKind::Input || op.kind == OpKind::Output) continue;
    // After the loop only accumulators (and what is computed from them) exist.
    if (!runsInLoop(plan, index)) {
      for (TensorId t : op.inputs) {
        const int producer = plan.producer[t];
        if (runsInLoop(plan, producer) && !graph::isAccumulator(block.ops[producer].kind)) {
          return std::nullopt;
        }
      }
    }
    FragmentRole role = FragmentRole::None;
    if (index == first) {
      role = FragmentRole::S;
    } else if (index == second) {
      if (roles[op.inputs[0]] != FragmentRole::S) return std::nullopt;
      // Its only reader accumulates it (in place, in the O accumulators).
      if (plan.consumers[op.output].size() != 1) return std::nullopt;
      const graph::BlockOp& reader = block.ops[plan.consumers[op.output][0]];
      if (reader.kind != OpKind::AccumSum && reader.kind != OpKind::AccumRescaledSum) {
        return std::nullopt;
      }
      role = FragmentRole::O;
    } else if (graph::isElementwise(op.kind)) {
      bool s = false, o = false, row = false;
      for (TensorId t : op.inputs) {
        s = s || roles[t] == FragmentRole::S;
        o = o || roles[t] == FragmentRole::O;
        row = row || roles[t] == FragmentRole::Row;
        if (roles[t] == FragmentRole::None) return std::nullopt;
      }
      if (s && o) return std::nullopt;
      role = s ? FragmentRole::S : o ? FragmentRole::O : FragmentRole::Row;
      (void)row;
    } else if (op.kind == OpKind::ReduceMax || op.kind == OpKind::ReduceSum) {
      if (roles[op.inputs[0]] != FragmentRole::S || op.attrs.dim != last) return std::nullopt;
      if (op.kind == OpKind::ReduceSum && op.attrs.to != 1) return std::nullopt;
      role = FragmentRole::Row;
    } else if (op.kind == OpKind::AccumMax) {
      if (roles[op.inputs[0]] != FragmentRole::Row) return std::nullopt;
      role = FragmentRole::Row;
    } else if (op.kind == OpKind::AccumSum || op.kind == OpKind::AccumRescaledSum) {
      if (op.kind == OpKind::AccumRescaledSum &&
          block.ops[plan.producer[op.inputs[1]]].kind != OpKind::AccumMax) {
        return std::nullopt;
      }
      const FragmentRole in = roles[op.inputs[0]];
      if (in == FragmentRole::Row) {
        role = FragmentRole::Row;
      } else if (in == FragmentRole::O && plan.producer[op.inputs[0]] == second) {
        role = FragmentRole::O;
      } else {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
    roles[op.output] = role;
  }
  return roles;
}

}  // namespace

std::optional<WarpgroupAttentionPlan> planWarpgroupAttention(const KernelPlan& plan,
                                                             const Target& target) {
  if (!target.warpgroupMma) return std::nullopt;
  const graph::BlockGraph& block = *plan.block;
  if (block.threads % kWarpgroupThreads != 0 || block.threads < 2 * kWarpgroupThreads) {
    return std::nullopt;
  }
  WarpgroupAttentionPlan at;
  at.consumers = static_cast<int>(block.threads / kWarpgroupThreads) - 1;
  std::vector<int> matmuls;
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (op.kind == OpKind::Matmul) matmuls.push_back(static_cast<int>(o));
    if (op.kind == OpKind::Output) {
      if (at.outputOp >= 0) return std::nullopt;
      at.outputOp = static_cast<int>(o);
    }
  }
  if (matmuls.size() != 2 || at.outputOp < 0) return std::nullopt;
  const auto inputOp = [&](TensorId tile) {
    const int op = plan.producer[tile];
    return block.ops[op].kind == OpKind::Input ? op : -1;
  };
  const auto perIteration = [&](int op) {
    return block.forloop > 1 && block.ops[op].fmap != graph::kReplicated;
  };
  at.firstMatmulOp = matmuls[0];
  at.secondMatmulOp = matmuls[1];
  const graph::BlockOp& first = block.ops[at.firstMatmulOp];
  const graph::BlockOp& second = block.ops[at.secondMatmulOp];
  const int qOp = inputOp(first.inputs[0]);
  const int kOp = inputOp(first.inputs[1]);
  const int vOp = inputOp(second.inputs[1]);
  if (qOp < 0 || kOp < 0 || vOp < 0 || perIteration(qOp) || !perIteration(kOp) ||
      !perIteration(vOp)) {
    return std::nullopt;
  }
  const std::optional<std::vector<FragmentRole>> roles =
      attentionRoles(plan, at.firstMatmulOp, at.secondMatmulOp);
  if (!roles) return std::nullopt;
  at.roles = *roles;
  if (at.roles[block.ops[at.outputOp].inputs[0]] != FragmentRole::O) return std::nullopt;

  const graph::Dims& qTile = block.tensors[first.inputs[0]].shape;
  const graph::Dims& sTile = block.tensors[first.output].shape;
  const graph::Dims& oTile = block.tensors[second.output].shape;
  const int rank = static_cast<int>(qTile.size());
  at.dtype = block.tensors[first.inputs[0]].dtype;
  for (TensorId t : {first.inputs[0], first.inputs[1], second.inputs[1]}) {
    if (!isSixteenBit(block.tensors[t].dtype) || block.tensors[t].dtype != at.dtype) {
      return std::nullopt;
    }
  }
  at.rows = qTile[rank - 2];
  at.d = qTile[rank - 1];
  at.kv = sTile[rank - 1];
  if (oTile[rank - 1] != at.d) return std::nullopt;  // V is [kv, d]: O has Q's width
  if (at.rows != kWgmmaRows * at.consumers) return std::nullopt;
  if ((at.kv != 64 && at.kv != 128) || (at.d != 64 && at.d != 128)) return std::nullopt;

  std::optional<BulkOperand> q = planOperand(plan, qOp, rank - 2, rank - 1, at.maps);
  std::optional<BulkOperand> k = planOperand(plan, kOp, rank - 1, rank - 2, at.maps);
  std::optional<BulkOperand> v = planOperand(plan, vOp, rank - 1, rank - 2, at.maps);
  if (!q || !k || !v) return std::nullopt;
  at.q = *q;
  at.k = *k;
  at.v = *v;

  at.producerRegisters = kProducerRegisters;
  const int64_t left = target.registersPerSm - kWarpgroupThreads * kProducerRegisters;
  at.consumerRegisters = static_cast<int>(
      std::min<int64_t>(kMaxConsumerRegisters, left / (kWarpgroupThreads * at.consumers) / 8 * 8));
  // S, O and P (packed) plus the chain's temporaries.
  if (at.kv / 2 + at.d / 2 + at.kv / 4 + 48 > at.consumerRegisters) return std::nullopt;

  at.q.offset = 0;
  at.qBytes = alignUp(at.q.boxBytes * at.q.boxes, kSwizzleAlignment);
  at.stagesOffset = at.qBytes;
  at.k.offset = 0;  // within a stage
  at.v.offset = alignUp(at.k.boxBytes * at.k.boxes, kSwizzleAlignment);
  at.stageBytes = alignUp(at.v.offset + at.v.boxBytes * at.v.boxes, kSwizzleAlignment);
  const int64_t stagingBytes = stagingBytesFor(plan, at.outputOp, at.consumers);
  const int64_t barrierBytes = 8 * (2 * kMaxStages + 1);
  const int64_t available =
      target.sharedBytesPerBlock - at.qBytes - barrierBytes - stagingBytes - kSwizzleAlignment;
  at.stages =
      static_cast<int>(std::min<int64_t>({available / at.stageBytes, kMaxStages, block.forloop}));
  if (at.stages < 2) return std::nullopt;
  at.barrierOffset = at.stagesOffset + at.stageBytes * at.stages;
  int64_t end = at.barrierOffset + 8 * (2 * at.stages + 1);
  if (stagingBytes > 0) {
    at.epilogueOffset = alignUp(end, 128);
    end = at.epilogueOffset + stagingBytes;
  }
  at.sharedBytes = end + kSwizzleAlignment;
  return at;
}

}  // namespace mugraph::plan
