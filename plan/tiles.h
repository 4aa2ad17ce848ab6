// The value types every lowering path shares: padded extents, shared-memory tile layouts and
// how a tile travels between global and shared memory or registers.
#pragma once

#include <array>
#include <cstdint>

#include "graph/dynamic_extents.h"
#include "graph/ir.h"

namespace mugraph::plan {

using Extent4 = std::array<int64_t, graph::kMaxRank>;  // padded to rank 4 with leading 1s

Extent4 padTo4(const graph::Dims& shape);

inline bool isSixteenBit(graph::DType dtype) {
  return dtype == graph::DType::F16 || dtype == graph::DType::BF16;
}

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

// Shared tile layout of a plain (row-major, f32 or 16-bit) tile of `shape`.
SharedTile rowMajorTile(const graph::Dims& shape, graph::DType dtype, bool swizzle);
// The layout of an input tile of a transposed device tensor, kept in its storage order.
SharedTile transposedTile(const graph::Dims& shape, graph::DType dtype);

// Element strides and steps in a device tensor: products of the dynamic dims' lengths where
// the tensor has them (graph/dynamic_extents.h), plain numbers otherwise.
using Stride4 = std::array<graph::DimProduct, graph::kMaxRank>;
using GridSteps = std::array<graph::DimProduct, graph::kGridAxes>;

// How an input tile is copied from its device tensor: the stored box (storage order, so
// the last dim is contiguous in global memory) and the element offsets that move it.
struct InputCopy {
  Extent4 boxExtent{};              // tile extents in storage order
  Stride4 globalStride{};           // element strides of the stored box dims in the device tensor
  GridSteps blockStep{};            // elements per blockIdx unit
  // Axes whose step is per trip of the loop: a part that follows the length holds the trip
  // count's tiles (graph::DimSplit::partFollowsLength), so the step is multiplied by it.
  std::array<bool, graph::kGridAxes> stepPerTrip{};
  graph::DimProduct iterationStep;  // elements per for-loop iteration (0: same tile every time)
  int chunkBytes = 0;               // bytes per copy: 16, 8 or 4 with cp.async, else one element
  bool async = false;
  bool perIteration = false;  // loaded every iteration (else once, before the loop)
};

// How an output tile is written to its (row-major) device tensor.
struct OutputCopy {
  Stride4 globalStride{};
  GridSteps blockStep{};
  int chunkBytes = 0;  // bytes per store along the last dim (16/8/4 or one element)
};

}  // namespace mugraph::plan
