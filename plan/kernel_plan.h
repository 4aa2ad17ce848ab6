// What is decided about one block graph, for one target, before any code is written: where every
// tile lives (shared memory, registers, nowhere), how shared tiles are laid out and typed, how
// input tiles travel from global memory (cp.async or plain copies, double-buffered or not),
// which matmuls run on tensor cores, which element-wise ops run in a producer's register
// epilogue, which accumulators are folded into the op that feeds them, and where the rescale
// factors of the online-softmax accumulators live. Keeping these choices in one value makes
// the emitters plain printers of a decided plan, and makes the plan's shared-memory bytes the
// one number the search prunes and ranks with, `mugraph show` prints and the manifest records.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "graph/ir.h"
#include "graph/tile_splits.h"
#include "graph/validate.h"
#include "plan/target.h"

namespace mugraph::plan {

using Extent4 = std::array<int64_t, graph::kMaxRank>;  // padded to rank 4 with leading 1s

enum class TileHome {
  None,       // never stored: consumed only in registers by its producer's epilogue
  Shared,     // a shared-memory tile
  Registers,  // an accumulator held in mma fragments across the for-loop
};

// A shared-memory tile: a row-major [rows][cols] array of `dtype`, 16-byte chunks of each
// row XOR-swizzled with (row & swizzleMask). Logical element (i0, i1, i2, i3) sits at row
// (i0*e1 + i1)*e2 + i2, col i3, or when `transposed` (an input tile of a transposed device
// tensor, kept in its storage order) at row (i0*e1 + i1)*e3 + i3, col i2.
struct SharedTile {
  graph::DType dtype = graph::DType::F32;
  Extent4 extent{1, 1, 1, 1};
  bool transposed = false;
  int64_t rows = 1;
  int64_t cols = 1;
  int swizzleMask = 0;
  int buffers = 1;     // > 1: a cp.async pipeline over the for-loop (KernelPlan::pipelineStages)
  int64_t bytes = 0;   // one buffer
  int64_t offset = 0;  // in the kernel's dynamic shared memory
};

// How an input tile is copied from its device tensor: the stored box (storage order, so
// the last dim is contiguous in global memory) and the element offsets that move it.
struct InputCopy {
  Extent4 boxExtent{};     // tile extents in storage order
  Extent4 globalStride{};  // element strides of the stored box dims in the device tensor
  std::array<int64_t, graph::kGridAxes> blockStep{0, 0, 0};  // elements per blockIdx unit
  int64_t iterationStep = 0;  // elements per for-loop iteration (0: same tile every time)
  int chunkBytes = 0;         // bytes per copy: 16, 8 or 4 with cp.async, else one element
  bool async = false;
  bool perIteration = false;  // loaded every iteration (else once, before the loop)
};

// How an output tile is written to its (row-major) device tensor.
struct OutputCopy {
  Extent4 globalStride{};
  std::array<int64_t, graph::kGridAxes> blockStep{0, 0, 0};
  int chunkBytes = 0;  // bytes per store along the last dim (16/8/4 or one element)
};

// A matmul on tensor cores: WarpsM x WarpsN warps, each owning a (MI*16) x (NI*8) block. A
// matmul of fewer than 16 rows (decode's query rows, a few tokens) is padded to one m16
// fragment row: `rows` says how many are real; the padding rows' products are discarded.
struct MmaPlan {
  int64_t rows = 0;  // real rows of the result (M); below 16 only when padded
  int warpsM = 1;
  int warpsN = 1;
  int mi = 1;
  int ni = 2;
  int64_t k = 16;
  bool aStoredKM = false;
  bool bStoredKN = true;
  graph::DType dtype = graph::DType::F16;
  int fragments() const { return mi * ni * 4; }  // floats per thread
  bool padded() const { return rows < 16; }
};

// How one op is emitted. Ops fused into a producer's epilogue and folded accumulators are
// not emitted at their own position (`emitted` is false).
struct OpPlan {
  bool emitted = true;
  std::vector<graph::TensorId> chain;  // tiles computed in this op's register epilogue
  std::optional<MmaPlan> mma;
  bool accumulateInPlace = false;  // mma result goes straight into a register accumulator
  bool warpPerRow = false;         // reductions: one warp per output element
};

// A block graph of element-wise ops and accumulators whose tiles all broadcast to one extent
// runs without shared memory or barriers: thread t owns elements t, t + threads, ... of that
// extent (`perThread` of them) and computes every tile's value at them in registers, tiles
// of size 1 along a dim redundantly in each thread, reading inputs straight from global
// memory and writing outputs from registers. A combine that walks split partials becomes a
// loop of a few register operations per partial instead of a barrier-separated op sequence.
struct ThreadOwnedElements {
  Extent4 extent{1, 1, 1, 1};
  int64_t elements = 1;
  int perThread = 1;
};

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
  int swizzleBytes = 128;  // the box lands 128-byte swizzled (rows of 128 bytes)
};

// One operand of the warpgroup matmul, copied by bulk tensor copies: per stage, `boxes`
// boxes of [rows][64] elements side by side (`boxBytes` each), the 64 along the tensor's
// contiguous dim, so the operand's contiguous extent is 64 * boxes. Box coordinates (map
// dims, innermost first) of the block's tile: blockIdx times `blockStep` plus the iteration
// times `iterationStep`; box j adds 64 * j to coordinate 0.
struct BulkOperand {
  int op = -1;         // the Input block op
  int map = -1;        // index into WarpgroupMmaPlan::maps
  bool kMajor = true;  // the contiguous dim is K (else M or N)
  int64_t rows = 0;    // rows of a box (the other matrix dim of the tile)
  int boxes = 1;
  int64_t boxBytes = 0;
  int64_t offset = 0;  // stage 0's first box in dynamic shared memory (1024-byte aligned)
  std::array<std::array<int64_t, graph::kGridAxes>, graph::kMaxRank> blockStep{};
  std::array<int64_t, graph::kMaxRank> iterationStep{};
};

// A block graph that is one matmul of two per-iteration 16-bit input tiles, accumulated over
// the for-loop and stored, on a target with warpgroup MMA: `wgmma.mma_async` from 128-byte
// swizzled shared tiles that bulk tensor copies fill through a ring of `stages` buffers, each
// with a `full` mbarrier (the copies' bytes landed) and an `empty` one (every consumer warp
// is done reading it). With `producer`, warpgroup 0 only issues copies (one thread) and the
// other `consumers` warpgroups only multiply; else the block's one warpgroup does both.
// Consumer warpgroup c owns rows [c * m / consumers, (c + 1) * m / consumers) of the block's
// m x n result, `mTiles` wgmma instructions of 64 rows each per 16 of K, n columns each.
struct WarpgroupMmaPlan {
  int64_t m = 0, n = 0, k = 0;  // block tile m x n, k per iteration
  int consumers = 1;
  bool producer = false;
  int mTiles = 1;
  int stages = 2;
  graph::DType dtype = graph::DType::F16;
  BulkOperand a, b;
  int matmulOp = -1, accumulatorOp = -1, outputOp = -1;
  int64_t barrierOffset = 0;  // full[stages] then empty[stages], 8 bytes each
  int64_t stageBytes = 0;     // both operands' boxes of one stage
  // A 16-bit result is stored through a 2 KiB staging buffer per multiplying warp (16 rows
  // of 64 columns, 16-byte chunks XOR-swizzled by row): each 128-byte row leaves as eight
  // 16-byte stores. -1: stored from registers in pairs (an f32 result).
  int64_t epilogueOffset = -1;
  // Dynamic shared memory: stages, barriers and staging, plus 1024 bytes to align the base.
  int64_t sharedBytes = 0;
  // Persistent: with a copy warpgroup and more tiles than multiprocessors, `launchGrid` is
  // one block per multiprocessor, each walking tiles blockIdx.x, + gridDim.x, ... in groups
  // of `rasterGroup` consecutive tiles along grid x (rows of A stay in L2 while the group
  // sweeps y); the copies of a block's next tile overlap the epilogue of its last. Else the
  // schedule's grid, one tile per block.
  bool persistent = false;
  std::array<int64_t, graph::kGridAxes> launchGrid{1, 1, 1};
  int rasterGroup = 1;
  int producerRegisters = 0;  // setmaxnreg budgets with a producer warpgroup (0: none)
  int consumerRegisters = 0;
  std::vector<TensorMapDesc> maps;  // kernel parameters after the pointers, in order
  int accumulatorsPerThread() const { return mTiles * static_cast<int>(n) / 2; }
};

// A block graph of attention's shape on a target with warpgroup MMA: a query tile Q loaded
// once, key and value tiles K and V per iteration, S = matmul(Q, K) in wgmma accumulators, a
// chain of element-wise ops, last-dim reductions, running maxima and rescaled sums on S and
// its row vectors (the online softmax) computed in registers, then O += matmul(P, V) with P
// (an S-shaped tile of the chain) fed to wgmma from registers and O kept in registers across
// the loop (rescaled in place by its running max's factor), and element-wise ops on O and
// row vectors after the loop. Warpgroup 0 issues the bulk copies (Q once, K and V through
// the ring of stages); each of `consumers` warpgroups owns 64 query rows. `roles` says, per
// tile, where its value lives.
enum class FragmentRole {
  None,
  S,    // [rows, kv] in the first matmul's accumulator layout
  Row,  // [rows, 1]: two values per thread (rows lane/4 and lane/4 + 8 of its warp)
  O,    // [rows, d] in the second matmul's accumulator layout
};
struct WarpgroupAttentionPlan {
  int64_t rows = 0;  // query rows of the block: 64 per consumer warpgroup
  int64_t kv = 0;    // key positions per iteration (N of the first matmul)
  int64_t d = 0;     // head dim: K of the first matmul, N of the second
  int consumers = 1;
  int stages = 2;
  graph::DType dtype = graph::DType::F16;
  BulkOperand q, k, v;
  int firstMatmulOp = -1, secondMatmulOp = -1, outputOp = -1;
  std::vector<FragmentRole> roles;  // per tile
  int64_t qBytes = 0;               // Q's boxes, at offset 0
  int64_t stagesOffset = 0;         // the ring: K's boxes then V's, per stage
  int64_t stageBytes = 0;
  int64_t barrierOffset = 0;    // full[stages], empty[stages], then Q's barrier
  int64_t epilogueOffset = -1;  // as WarpgroupMmaPlan's
  int64_t sharedBytes = 0;
  int producerRegisters = 0, consumerRegisters = 0;
  std::vector<TensorMapDesc> maps;  // Q, K, V
};

struct KernelPlan {
  const graph::KernelGraph* graph = nullptr;
  const graph::KernelOp* kernel = nullptr;
  const graph::BlockGraph* block = nullptr;
  std::vector<graph::Phase> phases;         // per tile
  // Per tile: how each dim walks its device dim (graph/tile_splits.h). Where a dim is partial
  // the generated code pads: loads zero-fill past the real elements, every value a computed
  // tile stores there is zero (so sums and matmul contractions over the padding add nothing),
  // maxima and mean squares loop over the real elements only, and stores skip the padding.
  std::vector<graph::TileSplit> splits;
  bool partial = false;  // some tile dim is partial
  // A loop whose last block part has fewer real iterations (graph/tile_splits.h): each block
  // stops after its own (KernelPlan::splits' `iterationsIn`).
  std::optional<graph::DimSplit> shortenedLoop;
  std::vector<int> producer;                // per tile: the op defining it
  std::vector<int> emitter;                 // per tile: the op whose code computes it
  std::vector<std::vector<int>> consumers;  // per tile: ops reading it (outputs too)
  std::vector<TileHome> home;               // per tile
  std::vector<SharedTile> shared;           // per tile (meaningful where home == Shared)
  std::vector<std::optional<SharedTile>> materialized;  // register accumulators read post-loop
  // Per tile: for an accum_max read by accum_rescaled_sum, this iteration's rescale factor
  // exp(m_{i-1} - m_i) (0 at iteration 0), f32 in the max's shape. The thread that updates an
  // element of the max writes it, so the old max is never read after it is overwritten.
  std::vector<std::optional<SharedTile>> rescaleFactors;
  std::vector<OpPlan> ops;                         // per block op
  std::vector<std::optional<InputCopy>> inputs;    // per block op (Input ops)
  std::vector<std::optional<OutputCopy>> outputs;  // per block op (Output ops)
  std::vector<int> rmsScratch;          // per block op: rms_norm root buffer offset, or -1
  std::vector<int> foldedAccumulators;  // accumulator ops folded into an epilogue
  int pipelineStages = 1;               // buffers of prefetched input tiles (2 to 8)
  int64_t sharedBytes = 0;              // dynamic shared memory of one block
  int minBlocksPerSm = 1;               // promised to ptxas through __launch_bounds__
  // Set when the block graph runs as thread-owned elements: then no tile lives in shared
  // memory and only `inputs` and `outputs` (their global strides) of the above are used.
  std::optional<ThreadOwnedElements> threadOwned;
  // Set when the block graph runs on the sm_90 warpgroup path: then only `outputs` of the
  // above is used besides it.
  std::optional<WarpgroupMmaPlan> warpgroupMma;
  // Set when the block graph runs as attention on the sm_90 warpgroup path: then only
  // `outputs` of the above is used besides it.
  std::optional<WarpgroupAttentionPlan> warpgroupAttention;
};

// Whether block op `op` runs inside the for-loop (once per iteration): per-iteration ops,
// accumulator updates and running ops (those on accum_max tiles only, whose last value is
// what post-loop ops read). Inputs and outputs are neither: their copies are planned apart.
bool runsInLoop(const KernelPlan& plan, int op);

// Decides everything for kernel op `kernelIndex` of `graph` (a block graph) on `target`. The
// plan points into `graph`, which must outlive it. Throws UserError for a kernel that is not
// a block graph; a plan that does not fit the target is returned (see checkLaunchable).
KernelPlan planKernel(const graph::KernelGraph& graph, int kernelIndex, const Target& target);

// Why a planned kernel cannot be launched on `target` (shared memory beyond its limits; grid
// and thread limits are IR rules, checked by graph validation), or an empty string.
std::string launchProblem(const KernelPlan& plan, const Target& target);

// UserError naming `kernelName` with launchProblem's reason, if there is one.
void checkLaunchable(const KernelPlan& plan, const Target& target, const std::string& kernelName);

// Shared tile layout of a plain (row-major, f32 or 16-bit) tile of `shape`.
SharedTile rowMajorTile(const graph::Dims& shape, graph::DType dtype, bool swizzle);

Extent4 padTo4(const graph::Dims& shape);

}  // namespace mugraph::plan
