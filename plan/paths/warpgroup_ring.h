// What the two sm_90 warpgroup paths (warpgroup_mma_plan.h, warpgroup_attention_plan.h)
// share: operands copied by bulk tensor copies as 128-byte swizzled boxes into a ring of
// shared-memory stages, each with a `full` mbarrier (the copies' bytes landed) and an `empty`
// one (every multiplying warp is done reading it), a copy warpgroup that trades registers
// with the multiplying ones, and the staging buffers of a 16-bit epilogue. The shared-memory
// layout goes through the allocator (shared_memory_allocator.h); every wgmma and copy-engine
// shape comes from the target (Target::warpgroup) and is recorded here for the emitter.
#pragma once

#include <array>
#include <initializer_list>
#include <optional>
#include <vector>

#include "graph/dynamic_extents.h"
#include "plan/target.h"
#include "plan/tiles.h"

namespace mugraph::plan {

struct KernelPlan;

// The result widths N of the m64nNk16 wgmma wrappers the device header has
// (codegen/device/generate_wgmma.cmake prints them; a codegen test checks they agree).
inline constexpr int64_t kWgmmaWidths[] = {64, 80, 96, 128, 192, 256};
inline bool isWgmmaWidth(int64_t n) {
  for (int64_t w : kWgmmaWidths) {
    if (w == n) return true;
  }
  return false;
}

// What cuTensorMapEncodeTiled needs to describe one device tensor to the bulk tensor copy
// engine (sm_90): the kernel receives the encoded map by value, after its pointer parameters;
// the manifest carries this description and the host encodes it (codegen/README.md).
struct TensorMapDesc {
  graph::TensorId tensor = -1;  // in the kernel graph
  graph::DType dtype = graph::DType::F16;
  int rank = 2;
  // Innermost (contiguous) dim first: elements per dim, bytes between consecutive indices of
  // dims 1..rank-1 ([0] is the element size), and the box each copy moves.
  std::array<int64_t, graph::kMaxRank> dims{1, 1, 1, 1};
  std::array<int64_t, graph::kMaxRank> strideBytes{0, 0, 0, 0};
  std::array<int64_t, graph::kMaxRank> box{1, 1, 1, 1};
  int swizzleBytes = 128;  // the box lands swizzled in rows of this many bytes
  // Per dim (innermost first): the dynamic dim whose length it is (its entry in `dims` is the
  // reference), or kStaticDim; the map is then encoded at launch from the length.
  std::array<int, graph::kMaxRank> dynamicDims{graph::kStaticDim, graph::kStaticDim,
                                               graph::kStaticDim, graph::kStaticDim};
  // Per dim: its byte stride as a product of lengths where it follows one (a head's stride
  // over a dynamic sequence, [h, s, d]); `strideBytes` holds it at the reference lengths, and
  // the map is encoded at launch from the lengths. Empty where every stride is static.
  std::array<graph::DimProduct, graph::kMaxRank> strideProducts{};
  bool stridesFollowLengths() const;
};

// One operand copied into the ring: per stage, `boxes` boxes of [rows][box[0]] elements side
// by side (`boxBytes` each), box[0] of `view` along the tensor's contiguous dim. Box
// coordinates (view dims, innermost first) of the block's tile: blockIdx times `blockStep`
// plus the iteration times `iterationStep`; box j adds box[0] * j to coordinate 0.
// The copy engine moves a box where it can address the tensor (`map` >= 0: its rows start
// 16-byte aligned). Where it cannot, the copy warpgroup gathers the box with cp.async in
// `gatherChunkBytes` chunks (4 or 8: the widest that divides every row stride and the row's
// bytes) into the same swizzled layout, zero-filling past the tensor's end as the copy engine
// does, so the multiplies read either alike.
struct BulkOperand {
  int op = -1;               // the Input block op
  int map = -1;              // index into the plan's maps, or -1 where the operand is gathered
  TensorMapDesc view;        // the tensor as the copies address it (the map's description)
  int gatherChunkBytes = 0;  // > 0: gathered with cp.async chunks of this many bytes
  // > 1: the operand's tile is alike in every block of a cluster of this many: block rank r
  // copies rows [r, r + 1) * rows / multicast of each box (the map's box holds that slice)
  // and multicasts them to every block of the cluster.
  int multicast = 1;
  int rowDim = 1;      // the view dim along a box's rows
  bool kMajor = true;  // the contiguous dim is K (else M or N)
  int64_t rows = 0;    // rows of a box (the other matrix dim of the tile)
  int boxes = 1;
  int64_t boxBytes = 0;
  int64_t offset = 0;  // the first box, within its stage (swizzle-aligned)
  std::array<std::array<int64_t, graph::kGridAxes>, graph::kMaxRank> blockStep{};
  std::array<int64_t, graph::kMaxRank> iterationStep{};
};

// The ring and the warpgroups around it. Consumer warpgroup c is warpgroup c + 1 with a copy
// warpgroup (`producer`), else the block's one warpgroup both copies and multiplies.
struct WarpgroupRing {
  WarpgroupLimits limits;  // the target's, which everything below was planned with
  int consumers = 1;
  bool producer = false;
  // Blocks one multiprocessor runs at once (graph::BlockGraph::occupancy): the ring's shared
  // memory and the setmaxnreg budgets are sized for that share of the multiprocessor.
  int occupancy = 1;
  int stages = 2;
  int64_t stagesOffset = 0;   // stage s starts at stagesOffset + s * stageBytes
  int64_t stageBytes = 0;     // every operand's boxes of one stage
  int64_t barrierOffset = 0;  // full[stages], empty[stages], then the path's own barriers
  // A 16-bit result is stored through a staging buffer per multiplying warp
  // (limits.stagingBytesPerWarp: 16 rows of one swizzled row, 16-byte chunks XOR-swizzled by
  // row): each row leaves as 16-byte stores. -1: stored from registers in pairs (f32).
  int64_t epilogueOffset = -1;
  // Dynamic shared memory: all of the above plus room to align the base to the swizzle period.
  int64_t sharedBytes = 0;
  // Arrivals that fill a stage: the copy thread's (with its expected bytes), or, where an
  // operand is gathered, every copy-warpgroup thread's once its chunks landed (plus the copy
  // thread's where another operand still uses the copy engine).
  int fillArrivals = 1;
  // Blocks of a thread-block cluster whose copies multicast into each other's stages: a stage
  // empties once the consumers of every one of them released it.
  int clusterBlocks = 1;
  int producerRegisters = 0;  // setmaxnreg budgets with a producer warpgroup (0: none)
  int consumerRegisters = 0;
  // Each thread's registers at launch (the block's share of the register file, in granules):
  // ptxas compiles every warpgroup's code within them, after a setmaxnreg.inc too (it fails
  // with C7602 where a wgmma needs more), so a multiplying warpgroup's accumulators must fit.
  int launchedRegisters = 0;
  std::vector<TensorMapDesc> maps;  // kernel parameters after the pointers, in order
  // Persistent: `launchGrid` is one block per multiprocessor, each walking the schedule's
  // tiles blockIdx.x, + gridDim.x, ... with the ring's iterations and phases running on from
  // one tile to the next, so the copies of a block's next tile overlap the end of its last.
  // Else the schedule's grid, one tile per block.
  bool persistent = false;
  std::array<int64_t, graph::kGridAxes> launchGrid{1, 1, 1};

  int warpsPerWarpgroup() const;
};

// The tensor map of input op `opIndex`'s device tensor and its box, and the operand's
// layout; nothing when its tile does not fit the boxes. `mn` is the logical dim of the tile
// that is M (operand A) or N (operand B), `kDim` the one that is K. Appends the map to `maps`.
// Where the copy engine cannot address the tensor and `mayGather` (the ring has a copy
// warpgroup that gathers), the operand is gathered instead and no map is appended. With
// `padLastBox`, a tile whose contiguous extent is no whole number of boxes (a head dim of 96)
// takes one more box, its columns past the tile being the copy engine's zeros past the
// tensor's end or the neighbouring elements: the caller's multiplies never read them.
std::optional<BulkOperand> planOperand(const KernelPlan& plan, const WarpgroupLimits& limits,
                                       int opIndex, int mn, int kDim,
                                       std::vector<TensorMapDesc>& maps, bool mayGather = false,
                                       bool padLastBox = false);

// Shares the copies of the operand of `operands` that is alike in every block of `block`'s
// cluster (clusters along one grid axis) by multicast: false where there is no such operand,
// it is gathered, or its box rows do not split into whole swizzle atoms per block.
bool planMulticast(WarpgroupRing& ring, const graph::BlockGraph& block,
                   std::initializer_list<BulkOperand*> operands);

// Whether some operand of `operands` is gathered; sets the ring's fill arrivals to match.
void countFillArrivals(WarpgroupRing& ring, std::initializer_list<const BulkOperand*> operands);

// Places `operands` side by side in one stage (each swizzle-aligned); returns the stage's bytes.
int64_t layOutStage(std::initializer_list<BulkOperand*> operands, int64_t swizzleAlignment);

// Bytes of the staging buffers of output op `outputOp`'s epilogue: 16-bit results whose rows
// start 16-byte aligned leave through them; others are stored from registers (0).
int64_t stagingBytesFor(const KernelPlan& plan, const WarpgroupRing& ring, int outputOp);

// The setmaxnreg budgets of a ring with a copy warpgroup: what is left of the block's share of
// the register file (1 / occupancy) after the copy warpgroup's share (more where it gathers:
// call after countFillArrivals), split between the consumers.
void budgetRegisters(WarpgroupRing& ring, const Target& target);

// Lays out shared memory after `leadBytes` loaded once (attention's Q): the stages, the
// barriers (2 per stage plus `extraBarriers`) and `stagingBytes`, with the most stages (at
// most the target's and `wantedStages`) that fit in one block of the ring's occupancy; false
// when two do not.
// `stagingInLead`: the staging buffers reuse the lead region's first bytes instead of a
// region of their own (the caller has shown each warp's buffer lies in lead bytes only its
// own warpgroup reads, and that it reads them for the last time before its epilogue).
bool layOutRing(WarpgroupRing& ring, int64_t leadBytes, int extraBarriers, int64_t stagingBytes,
                int64_t wantedStages, const Target& target, bool stagingInLead = false);

}  // namespace mugraph::plan
