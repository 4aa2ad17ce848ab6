// The general lowering path (any block graph, any target): every op a loop over its output
// elements or an mma.sync matmul, tiles in XOR-swizzled shared memory, inputs through a
// cp.async pipeline, fused element-wise chains in register epilogues, accumulators folded
// into their producers and, behind tensor-core matmuls, held in registers.
#pragma once

#include <optional>
#include <vector>

#include "plan/target.h"
#include "plan/tiles.h"

namespace mugraph::plan {

struct KernelPlan;

enum class TileHome {
  None,       // never stored: consumed only in registers by its producer's epilogue
  Shared,     // a shared-memory tile
  Registers,  // an accumulator held in mma fragments across the for-loop
};

// A matmul on tensor cores: WarpsM x WarpsN warps, each owning a (MI*16) x (NI*8) block. A
// matmul of fewer than 16 rows (decode's query rows, a few tokens) is padded to one m16
// fragment row: `rows` says how many are real; the padding rows' products are discarded.
// Where the block has more warps than such blocks (a small-batch projection: one 16 x 16
// block, eight warps), WarpsK groups of them each multiply a K/WarpsK slice; the groups' sums
// meet in shared memory (`scratchOffset`) and group 0, the warps below WarpsM x WarpsN, holds
// the result: it alone runs the epilogue and stores, as a plan without the split does.
struct MmaPlan {
  int64_t rows = 0;  // real rows of the result (M); below 16 only when padded
  int warpsM = 1;
  int warpsN = 1;
  int warpsK = 1;
  int mi = 1;
  int ni = 2;
  int64_t k = 16;
  bool aStoredKM = false;
  bool bStoredKN = true;
  graph::DType dtype = graph::DType::F16;
  int64_t scratchOffset = 0;  // warpsK > 1: groups 1.. write their sums here
  int fragments() const { return mi * ni * 4; }  // floats per thread
  bool padded() const { return rows < 16; }
  int warpsMN() const { return warpsM * warpsN; }
  // Floats the groups other than 0 leave in shared memory: [group][warp][fragment][lane].
  int64_t scratchBytes() const {
    return warpsK > 1 ? int64_t{warpsK - 1} * warpsMN() * 32 * fragments() * 4 : 0;
  }
};

// A row phase: a reduce_max, the element-wise ops emitted right after it over the reduced
// tile's shape (reading it, its result or the running max it updates, each other, and tiles
// computed before it), and the reduce_sum of their values over the same dim (a softmax's max,
// exp(x - max) and sum) in one pass: a group of `lanes` lanes per row, combining with
// shuffles, so the ops share one barrier instead of one each. Planned on the reduce_max; the
// others are not emitted at their own positions.
struct RowPhase {
  int lanes = 32;                // a power of two, at most a warp
  std::vector<int> elementwise;  // the element-wise ops, in order
  int sum = 0;                   // the reduce_sum
  int runningMax = -1;  // the accum_max folded into the reduce_max (the ops read it), or -1
};

// How one op is emitted. Ops fused into a producer's epilogue and folded accumulators are
// not emitted at their own position (`emitted` is false).
struct OpPlan {
  bool emitted = true;
  std::vector<graph::TensorId> chain;  // tiles computed in this op's register epilogue
  std::optional<MmaPlan> mma;
  bool accumulateInPlace = false;  // mma result goes straight into a register accumulator
  // Reductions: one warp per output element (lanes stride over the reduced dim and combine
  // with shuffles) where the reduction is long enough to keep a warp busy.
  bool warpPerRow = false;
  // An rms_norm of fewer rows than the block has warps: this many warps share each row, their
  // partial sums met in the op's shared scratch (rows x warpsPerRow floats), so no warp idles
  // while one walks a decode's 4096-wide row alone.
  int warpsPerRow = 1;
  std::optional<RowPhase> rowPhase;  // on a reduce_max that leads a row phase
  // A reduce_sum over a unary element-wise op of a loaded tile read by nothing else (a
  // norm's squares): that op, applied to each term as the sum reads it, so its tile is never
  // stored and no barrier stands between them; or -1.
  int prologue = -1;
};

struct GeneralPlan {
  std::vector<int> emitter;                             // per tile: the op whose code computes it
  std::vector<TileHome> home;                           // per tile
  std::vector<SharedTile> shared;                       // per tile (where home == Shared)
  std::vector<std::optional<SharedTile>> materialized;  // register accumulators read post-loop
  // Per tile: for an accum_max read by accum_rescaled_sum, this iteration's rescale factor
  // exp(m_{i-1} - m_i) (0 at iteration 0), f32 in the max's shape. The thread that updates an
  // element of the max writes it, so the old max is never read after it is overwritten.
  std::vector<std::optional<SharedTile>> rescaleFactors;
  std::vector<OpPlan> ops;              // per block op
  std::vector<int> rmsScratch;          // per block op: rms_norm root buffer offset, or -1
  std::vector<int> foldedAccumulators;  // accumulator ops folded into an epilogue
};

// Plans `plan`'s block graph on the general path: sets plan.path to its GeneralPlan, the
// input copies, pipeline stages, shared-memory bytes and blocks per multiprocessor. `plan`
// needs its graph facts and output copies.
void planGeneral(KernelPlan& plan, const Target& target);

}  // namespace mugraph::plan
