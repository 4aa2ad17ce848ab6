// Planning the general path (see general_plan.h). Decisions are made in the order they
// depend on each other: fusion, tensor-core matmuls, folded accumulators, where each tile
// lives, rescale factors, shared layouts, reductions, pipeline stages, then shared-memory
// offsets.
#include "plan/paths/general_plan.h"

#include <algorithm>
#include <set>

#include "graph/cuda_limits.h"
#include "plan/kernel_plan.h"
#include "plan/shared_memory_allocator.h"

namespace mugraph::plan {
namespace {

using graph::DType;
using graph::OpKind;
using graph::TensorId;

// A recorded fusion group is honored while each fused op has the producer's shape, reads
// only the chain or tiles computed before the producer, and runs where the producer runs (a
// post-loop op on a running tile does not belong in the loop, where accumulators are not
// final yet); the rest of the group (from the first op that does not fit) runs as ordinary
// ops, which computes the same values.
void honorFusion(const KernelPlan& plan, GeneralPlan& g) {
  const graph::BlockGraph& block = *plan.block;
  for (const graph::FusionGroup& group : block.fusion) {
    // Loaded tiles and accumulators have no element loop to host an epilogue.
    const int host = g.emitter[group.producer];
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
        fits = fits && g.emitter[in] < host;
      }
      if (!fits) break;
      chain.insert(t);
      g.ops[host].chain.push_back(t);
      g.ops[plan.producer[t]].emitted = false;
      g.emitter[t] = host;
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
void foldAccumulators(const KernelPlan& plan, GeneralPlan& g) {
  const graph::BlockGraph& block = *plan.block;
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (!graph::isAccumulator(op.kind)) continue;
    const TensorId in = op.inputs[0];
    const int host = g.emitter[in];
    if (block.ops[host].kind == OpKind::Input) continue;
    if (op.kind == OpKind::AccumRescaledSum && host <= g.emitter[op.inputs[1]]) continue;
    g.ops[o].emitted = false;
    g.foldedAccumulators.push_back(static_cast<int>(o));
    g.emitter[op.output] = host;
    if (!g.ops[host].mma || (op.kind == OpKind::AccumMax && readInLoop(plan, op.output))) {
      continue;
    }
    g.home[op.output] = TileHome::Registers;
    const bool onlyConsumer = plan.consumers[in].size() == 1 && g.ops[host].chain.empty();
    if (op.kind != OpKind::AccumMax && in == block.ops[host].output && onlyConsumer) {
      g.ops[host].accumulateInPlace = true;
    }
  }
}

// Each running max read by a rescaled sum gets a factor array. The max itself is in shared
// memory: the sum is never folded into the op that updates the max, so decideHomes counts
// it as a reader outside that op's epilogue.
void planRescaleFactors(const KernelPlan& plan, GeneralPlan& g) {
  for (const graph::BlockOp& op : plan.block->ops) {
    if (op.kind != OpKind::AccumRescaledSum) continue;
    const TensorId max = op.inputs[1];
    g.rescaleFactors[max] = rowMajorTile(plan.block->tensors[max].shape, DType::F32, false);
  }
}

bool readsInRegisters(const KernelPlan& plan, const GeneralPlan& g, TensorId tile, int consumer) {
  const graph::BlockOp& op = plan.block->ops[consumer];
  if (op.kind == OpKind::Output) return g.home[tile] == TileHome::Registers;
  const int prologue = g.ops[consumer].prologue;
  if (prologue >= 0 && plan.block->ops[prologue].output == tile) return true;
  if (g.ops[consumer].emitted) return false;
  // A chain member or folded accumulator reads `tile` inside the same epilogue.
  return g.emitter[op.output] == g.emitter[tile];
}

// Reduction prologues (OpPlan::prologue): a reduce_sum whose operand a unary element-wise op
// computes from a loaded tile, for it alone and where it runs, reads the loaded tile and
// applies the op to each term.
void planReductionPrologues(const KernelPlan& plan, GeneralPlan& g) {
  const graph::BlockGraph& block = *plan.block;
  for (int r = 0; r < static_cast<int>(block.ops.size()); ++r) {
    const graph::BlockOp& sum = block.ops[r];
    if (sum.kind != OpKind::ReduceSum || !g.ops[r].emitted) continue;
    const TensorId operand = sum.inputs[0];
    const int u = plan.producer[operand];
    const graph::BlockOp& unary = block.ops[u];
    if (!graph::isElementwise(unary.kind) || unary.kind == OpKind::CausalMask ||
        unary.inputs.size() != 1 || !g.ops[u].emitted || !g.ops[u].chain.empty() ||
        plan.consumers[operand].size() != 1 || runsInLoop(plan, u) != runsInLoop(plan, r) ||
        block.ops[plan.producer[unary.inputs[0]]].kind != OpKind::Input ||
        block.tensors[unary.inputs[0]].shape != block.tensors[operand].shape) {
      continue;
    }
    g.ops[r].prologue = u;
    g.ops[u].emitted = false;
    g.emitter[operand] = r;
  }
}

void decideHomes(const KernelPlan& plan, GeneralPlan& g) {
  const graph::BlockGraph& block = *plan.block;
  for (size_t t = 0; t < block.tensors.size(); ++t) {
    if (g.home[t] == TileHome::Registers) {
      for (int c : plan.consumers[t]) {
        if (block.ops[c].kind != OpKind::Output) {
          g.materialized[t] = rowMajorTile(block.tensors[t].shape, DType::F32, false);
        }
      }
      continue;
    }
    bool shared = block.ops[plan.producer[t]].kind == OpKind::Input;
    for (int c : plan.consumers[t]) shared = shared || !readsInRegisters(plan, g, t, c);
    g.home[t] = shared ? TileHome::Shared : TileHome::None;
  }
}

void layOutSharedTiles(const KernelPlan& plan, GeneralPlan& g,
                       const std::vector<bool>& transposedInput) {
  const graph::BlockGraph& block = *plan.block;
  std::vector<bool> mmaOperand(block.tensors.size(), false);
  for (size_t o = 0; o < block.ops.size(); ++o) {
    if (!g.ops[o].mma) continue;
    for (TensorId t : block.ops[o].inputs) mmaOperand[t] = true;
  }
  for (size_t t = 0; t < block.tensors.size(); ++t) {
    if (g.home[t] != TileHome::Shared) continue;
    const graph::BlockTensor& tile = block.tensors[t];
    const bool loaded = block.ops[plan.producer[t]].kind == OpKind::Input;
    const DType dtype = loaded || mmaOperand[t] ? tile.dtype : DType::F32;
    g.shared[t] = transposedInput[t] ? transposedTile(tile.shape, dtype)
                                     : rowMajorTile(tile.shape, dtype, isSixteenBit(dtype));
  }
}

// Enough buffers to keep the target's bytes in flight (at least three, so two iterations'
// copies overlap the compute, at most the target's maximum, at most one per iteration), as
// long as the target's wanted number of blocks still fits on a multiprocessor; never fewer
// than two.
void choosePipelineStages(KernelPlan& plan, GeneralPlan& g, const Target& target) {
  int64_t stageBytes = 0;
  for (const SharedTile& tile : g.shared) {
    if (tile.buffers > 1) stageBytes += tile.bytes;
  }
  if (stageBytes == 0) {
    allocateSharedMemory(plan, g);
    return;
  }
  const auto useStages = [&](int stages) {
    for (SharedTile& tile : g.shared) {
      if (tile.buffers > 1) tile.buffers = stages;
    }
    plan.pipelineStages = stages;
    allocateSharedMemory(plan, g);
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

// Shared memory the groups of a warp K split may fill (graph-independent: the split only
// arises for tiles smaller than one 16 x 16 block per warp, so the bound is rarely reached).
constexpr int64_t kMaxSplitScratchBytes = 32 * 1024;

// Whether the matmul at `o` may split K across warp groups: its product is reduced across the
// groups right after the multiply (no accumulator in place), or it accumulates in place into
// a register sum that only an output store reads, after the loop, where the groups meet. A
// rescaled sum (flash attention's P·V) rescales per iteration and keeps one group.
bool splittableAcrossWarps(const KernelPlan& plan, const GeneralPlan& g, int o) {
  if (!g.ops[o].accumulateInPlace) return true;
  const graph::BlockGraph& block = *plan.block;
  for (int accumulatorOp : g.foldedAccumulators) {
    const graph::BlockOp& acc = block.ops[accumulatorOp];
    if (acc.inputs[0] != block.ops[o].output) continue;
    if (acc.kind != OpKind::AccumSum || g.home[acc.output] != TileHome::Registers ||
        g.materialized[acc.output] || plan.consumers[acc.output].size() != 1) {
      return false;
    }
    return block.ops[plan.consumers[acc.output][0]].kind == OpKind::Output;
  }
  return false;
}

// Warps left idle by a matmul's WarpsM x WarpsN blocks split its K (MmaPlan): the most groups
// that divide its 16-column steps and fit the block's warps.
void planWarpKSplits(const KernelPlan& plan, GeneralPlan& g) {
  const int warps = plan.block->threads / graph::kWarpSize;
  for (size_t o = 0; o < plan.block->ops.size(); ++o) {
    if (!g.ops[o].mma || !splittableAcrossWarps(plan, g, static_cast<int>(o))) continue;
    MmaPlan& mma = *g.ops[o].mma;
    const int64_t steps = mma.k / 16;
    for (int groups = warps / mma.warpsMN(); groups > 1; --groups) {
      mma.warpsK = groups;
      if (steps % groups == 0 && mma.scratchBytes() <= kMaxSplitScratchBytes) break;
      mma.warpsK = 1;
    }
  }
}

// Long reductions (32 or more terms) give each output element to a warp; short ones give it
// to a thread.
constexpr int64_t kWarpReductionMinTerms = 32;

void planWarpReductions(const KernelPlan& plan, GeneralPlan& g) {
  const graph::BlockGraph& block = *plan.block;
  if (block.threads % graph::kWarpSize != 0) return;
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (op.kind != OpKind::ReduceSum && op.kind != OpKind::ReduceMax &&
        op.kind != OpKind::RmsNorm) {
      continue;
    }
    const int64_t n = block.tensors[op.inputs[0]].shape[op.attrs.dim];
    const int64_t terms = op.kind == OpKind::ReduceSum ? n / op.attrs.to : n;
    g.ops[o].warpPerRow = terms >= kWarpReductionMinTerms;
    if (op.kind != OpKind::RmsNorm || !g.ops[o].warpPerRow) continue;
    const int64_t rows = graph::elementCount(block.tensors[op.output].shape) / n;
    const int64_t warps = block.threads / graph::kWarpSize;
    int shared = 1;
    while (rows * shared * 2 <= warps && terms >= kWarpReductionMinTerms * shared * 2) shared *= 2;
    g.ops[o].warpsPerRow = shared;
  }
}

// The emitted op after `o`, or -1.
int nextEmitted(const GeneralPlan& g, int o) {
  for (int next = o + 1; next < static_cast<int>(g.ops.size()); ++next) {
    if (g.ops[next].emitted) return next;
  }
  return -1;
}

// Row phases (RowPhase): a reduce_max, then element-wise ops over the reduced tile's shape,
// then a reduce_sum over the same dim of a value they compute, with nothing emitted between
// them. Everything the element-wise ops read besides the reduced tile, the max and each
// other's values is computed before the reduce_max, so moving them to its position changes
// no value.
void planRowPhases(const KernelPlan& plan, GeneralPlan& g) {
  const graph::BlockGraph& block = *plan.block;
  if (block.threads % graph::kWarpSize != 0) return;
  for (int r = 0; r < static_cast<int>(block.ops.size()); ++r) {
    const graph::BlockOp& max = block.ops[r];
    if (max.kind != OpKind::ReduceMax || !g.ops[r].emitted || !g.ops[r].chain.empty()) continue;
    const TensorId x = max.inputs[0];
    const int dim = max.attrs.dim;
    // The max the element-wise ops read: the reduce_max's result, or the running max folded
    // into it (then the result itself has no other reader).
    TensorId rowMax = max.output;
    int running = -1;
    bool plain = true;
    for (int c : plan.consumers[max.output]) {
      const graph::BlockOp& consumer = block.ops[c];
      if (consumer.kind == OpKind::AccumMax && !g.ops[c].emitted &&
          g.emitter[consumer.output] == r && g.home[max.output] == TileHome::None &&
          plan.consumers[max.output].size() == 1 && g.home[consumer.output] == TileHome::Shared) {
        running = c;
        rowMax = consumer.output;
      } else if (graph::isAccumulator(consumer.kind)) {
        plain = false;
      }
    }
    if (!plain) continue;
    RowPhase phase;
    phase.runningMax = running;
    std::set<TensorId> values{x, rowMax};
    int next = nextEmitted(g, r);
    for (; next >= 0; next = nextEmitted(g, next)) {
      const graph::BlockOp& op = block.ops[next];
      if (!graph::isElementwise(op.kind) || g.ops[next].mma ||
          block.tensors[op.output].shape != block.tensors[x].shape ||
          runsInLoop(plan, next) != runsInLoop(plan, r)) {
        break;
      }
      std::vector<int> members{next};
      for (TensorId t : g.ops[next].chain) members.push_back(plan.producer[t]);
      bool ready = true;
      std::set<TensorId> computed = values;
      for (int m : members) {
        for (TensorId in : block.ops[m].inputs) {
          ready = ready && (computed.count(in) || g.emitter[in] < r);
        }
        computed.insert(block.ops[m].output);
      }
      if (!ready) break;
      values = computed;
      phase.elementwise.push_back(next);
    }
    if (phase.elementwise.empty() || next < 0) continue;
    const graph::BlockOp& sum = block.ops[next];
    if (sum.kind != OpKind::ReduceSum || sum.attrs.to != 1 || sum.attrs.dim != dim ||
        runsInLoop(plan, next) != runsInLoop(plan, r) || !values.count(sum.inputs[0]) ||
        sum.inputs[0] == x || sum.inputs[0] == rowMax) {
      continue;
    }
    phase.sum = next;
    const int64_t terms = block.tensors[x].shape[dim];
    while (phase.lanes > 1 && phase.lanes / 2 >= terms) phase.lanes /= 2;
    // The reduce_max's code computes their values (and shared memory holds every tile the
    // phase reads or writes at once: see allocateSharedMemory).
    for (int o : phase.elementwise) {
      g.ops[o].emitted = false;
      g.emitter[block.ops[o].output] = r;
      for (TensorId t : g.ops[o].chain) g.emitter[t] = r;
    }
    g.ops[next].emitted = false;
    g.emitter[sum.output] = r;
    for (TensorId t : g.ops[next].chain) g.emitter[t] = r;
    g.ops[r].rowPhase = std::move(phase);
  }
}

// Input tiles loaded every iteration by cp.async are double-buffered at least.
void bufferAsyncInputs(const KernelPlan& plan, GeneralPlan& g) {
  for (size_t o = 0; o < plan.inputs.size(); ++o) {
    if (plan.inputs[o] && plan.inputs[o]->async && plan.inputs[o]->perIteration) {
      g.shared[plan.block->ops[o].output].buffers = 2;
    }
  }
}

}  // namespace

void planGeneral(KernelPlan& plan, const Target& target) {
  const graph::BlockGraph& block = *plan.block;
  GeneralPlan g;
  const size_t tiles = block.tensors.size();
  g.emitter = plan.producer;
  g.ops.assign(block.ops.size(), OpPlan{});
  g.rmsScratch.assign(block.ops.size(), -1);
  g.home.assign(tiles, TileHome::None);
  g.shared.assign(tiles, SharedTile{});
  g.materialized.assign(tiles, std::nullopt);
  g.rescaleFactors.assign(tiles, std::nullopt);
  std::vector<bool> transposedInput(tiles, false);
  for (const graph::BlockOp& op : block.ops) {
    if (op.kind != OpKind::Input) continue;
    const graph::TensorDesc& source = plan.graph->tensors[plan.kernel->inputs[op.kernelTensor]];
    transposedInput[op.output] = source.layout == graph::Layout::Transposed;
  }
  honorFusion(plan, g);
  for (size_t o = 0; o < block.ops.size(); ++o) {
    if (block.ops[o].kind == OpKind::Matmul) {
      g.ops[o].mma = planMma(plan, block.ops[o], transposedInput);
    }
  }
  foldAccumulators(plan, g);
  planReductionPrologues(plan, g);
  decideHomes(plan, g);
  planWarpKSplits(plan, g);
  planRescaleFactors(plan, g);
  layOutSharedTiles(plan, g, transposedInput);
  planWarpReductions(plan, g);
  planRowPhases(plan, g);
  bufferAsyncInputs(plan, g);
  choosePipelineStages(plan, g, target);
  // Several blocks per multiprocessor where shared memory allows and registers stay
  // generous: two blocks of at most 256 threads leave 128 registers per thread, which the
  // tiled GEMM fits without spilling.
  const bool severalBlocks =
      block.threads * target.wantedBlocksPerSm <= 512 &&
      plan.sharedBytes <= target.sharedBytesForBlocksPerSm(target.wantedBlocksPerSm);
  plan.minBlocksPerSm = severalBlocks ? target.wantedBlocksPerSm : 1;
  plan.path = std::move(g);
}

}  // namespace mugraph::plan
