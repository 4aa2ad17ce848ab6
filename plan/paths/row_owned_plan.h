// The row-owned path: a block graph without a loop whose ops are element-wise or work along
// the rows of its tiles' last dim (reduce_sum, reduce_max, rms_norm, rotate_half,
// rotate_pairs), as RMSNorm, RoPE, a residual add or a softmax's row statistics are. Each warp
// owns whole rows, one at a time: lane l holds the row's elements in chunks of `vector`
// consecutive ones, chunk c at column (c * 32 + l) * vector, loaded straight from global
// memory with one read per chunk into registers; a row's sum or max is a warp shuffle; results
// are stored from registers. No shared memory, no barriers. It serves kernels that the
// thread-owned path cannot (a reduction, a rotation, or more elements per thread than it
// keeps), where the general path stages whole tiles through shared memory with a barrier per
// op (an RMSNorm over 2048 x 2048 ran at 15% of memory bandwidth there, H200).
#pragma once

#include <cstdint>
#include <optional>

#include "plan/tiles.h"

namespace mugraph::plan {

struct KernelPlan;

struct RowOwnedPlan {
  Extent4 extent{1, 1, 1, 1};  // every tile's, dim by dim, or 1, or fewer rows (masked)
  int64_t rows = 1;            // extent[0] * extent[1] * extent[2]
  int perLane = 1;             // elements of a row in each lane's registers: extent[3] / 32
  int vector = 1;              // consecutive elements per chunk, one load or store each
  int warps = 1;
  // Rows a warp has in flight: its loop unrolled this many times, so the loads of the next rows
  // are issued before the current row's stores (a row of a few elements per lane alone would
  // leave the memory system waiting on one load per warp).
  int rowsInFlight = 1;
  int64_t rowsPerWarp() const { return (rows + warps - 1) / warps; }
};

// The plan when `plan`'s block graph qualifies (see above; inputs and outputs planned, tiles
// whole); else nothing. The vector width is the widest every full-row input and output keeps
// aligned (InputCopy/OutputCopy::chunkBytes) and that splits a row (and half a row, where a
// rotation pairs element c with c + perLane / 2 in the same lane) into whole chunks; an even
// one where rotate_pairs pairs column 2i with 2i + 1 (then both are in one chunk of one lane).
std::optional<RowOwnedPlan> planRowOwned(const KernelPlan& plan);

}  // namespace mugraph::plan
