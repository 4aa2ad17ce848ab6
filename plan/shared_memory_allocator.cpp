// Interval-based first-fit allocation of shared tiles (see shared_memory_allocator.h).
#include "plan/shared_memory_allocator.h"

#include <algorithm>

namespace mugraph::plan {
namespace {

using graph::OpKind;

struct Live {
  int64_t start = 0;
  int64_t end = 0;
  int64_t bytes = 0;
  int64_t* offset = nullptr;
};

// Program points: 0 before the loop, 1 + op inside the loop, loopEnd, then the epilogue ops,
// then the output stores.
class ProgramPoints {
 public:
  ProgramPoints(const KernelPlan& plan, const GeneralPlan& general)
      : plan_(plan), general_(general), ops_(static_cast<int64_t>(plan.block->ops.size())) {}

  int64_t loopEnd() const { return 1 + ops_; }
  int64_t end() const { return 3 + 2 * ops_; }

  int64_t ofOp(int op) const {
    const graph::BlockOp& blockOp = plan_.block->ops[op];
    if (blockOp.kind == OpKind::Output) return end();
    if (blockOp.kind == OpKind::Input || runsInLoop(plan_, op)) return 1 + op;
    return 2 + ops_ + op;
  }

  // Where `op` reads its operands: its own point, or its host's when it runs in an epilogue.
  int64_t ofUse(int op) const {
    if (general_.ops[op].emitted) return ofOp(op);
    return ofOp(general_.emitter[plan_.block->ops[op].output]);
  }

  int64_t lastUse(graph::TensorId tile, int64_t fallback, bool outputsToo = true) const {
    int64_t last = fallback;
    for (int c : plan_.consumers[tile]) {
      if (!outputsToo && plan_.block->ops[c].kind == OpKind::Output) continue;
      last = std::max(last, ofUse(c));
    }
    return last;
  }

 private:
  const KernelPlan& plan_;
  const GeneralPlan& general_;
  int64_t ops_;
};

}  // namespace

int64_t alignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

int64_t SharedRegions::place(int64_t bytes, int64_t alignment) {
  const int64_t offset = alignUp(end_, alignment);
  end_ = offset + bytes;
  return offset;
}

void allocateSharedMemory(KernelPlan& plan, GeneralPlan& general) {
  const graph::BlockGraph& block = *plan.block;
  const ProgramPoints points(plan, general);
  const bool looping = block.forloop > 1;
  std::vector<Live> live;
  for (size_t t = 0; t < block.tensors.size(); ++t) {
    const int producer = plan.producer[t];
    const OpKind kind = block.ops[producer].kind;
    if (general.home[t] == TileHome::Shared) {
      SharedTile& tile = general.shared[t];
      const bool acrossIterations = kind == OpKind::Input || graph::isAccumulator(kind);
      const int64_t defined = points.ofOp(general.emitter[t]);
      Live item;
      item.start = acrossIterations ? 0 : defined;
      item.end = points.lastUse(static_cast<graph::TensorId>(t), defined);
      if (acrossIterations && looping) item.end = std::max(item.end, points.loopEnd());
      item.bytes = tile.bytes * tile.buffers;
      item.offset = &tile.offset;
      live.push_back(item);
    }
    if (general.materialized[t]) {
      Live item;
      item.start = points.loopEnd();
      item.end = points.lastUse(static_cast<graph::TensorId>(t), item.start, false);
      item.bytes = general.materialized[t]->bytes;
      item.offset = &general.materialized[t]->offset;
      live.push_back(item);
    }
    if (general.rescaleFactors[t]) {
      Live item;
      item.start = item.end = points.ofOp(general.emitter[t]);
      for (int c : plan.consumers[t]) {
        if (block.ops[c].kind != OpKind::AccumRescaledSum) continue;
        item.end = std::max(item.end, points.ofUse(c));
      }
      item.bytes = general.rescaleFactors[t]->bytes;
      item.offset = &general.rescaleFactors[t]->offset;
      live.push_back(item);
    }
  }
  std::vector<int64_t> scratchOffsets(block.ops.size(), 0);
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (op.kind != OpKind::RmsNorm || !general.ops[o].emitted) continue;
    const graph::Dims& shape = block.tensors[op.output].shape;
    Live item;
    item.start = item.end = points.ofOp(static_cast<int>(o));
    item.bytes = graph::elementCount(shape) / shape[op.attrs.dim] * general.ops[o].warpsPerRow * 4;
    item.offset = &scratchOffsets[o];
    live.push_back(item);
  }
  // A warp K split's sums: met right after the multiply, or, for a sum held in registers,
  // at its output store (splittableAcrossWarps), so from the multiply to the end.
  for (size_t o = 0; o < block.ops.size(); ++o) {
    if (!general.ops[o].mma || general.ops[o].mma->warpsK == 1) continue;
    MmaPlan& mma = *general.ops[o].mma;
    Live item;
    item.start = points.ofOp(static_cast<int>(o));
    item.end = general.ops[o].accumulateInPlace ? points.end() : item.start;
    item.bytes = mma.scratchBytes();
    item.offset = &mma.scratchOffset;
    live.push_back(item);
  }
  std::stable_sort(live.begin(), live.end(),
                   [](const Live& a, const Live& b) { return a.bytes > b.bytes; });
  std::vector<const Live*> placed;
  int64_t total = 0;
  for (Live& item : live) {
    int64_t offset = 0;
    bool moved = true;
    while (moved) {
      moved = false;
      for (const Live* other : placed) {
        const bool overlapsInTime = item.start <= other->end && other->start <= item.end;
        const bool overlapsInSpace =
            offset < *other->offset + other->bytes && *other->offset < offset + item.bytes;
        if (overlapsInTime && overlapsInSpace) {
          offset = alignUp(*other->offset + other->bytes, kSharedTileAlignment);
          moved = true;
        }
      }
    }
    *item.offset = offset;
    placed.push_back(&item);
    total = std::max(total, offset + item.bytes);
  }
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (op.kind == OpKind::RmsNorm && general.ops[o].emitted) {
      general.rmsScratch[o] = static_cast<int>(scratchOffsets[o]);
    }
  }
  plan.sharedBytes = alignUp(total, 16);
}

}  // namespace mugraph::plan
