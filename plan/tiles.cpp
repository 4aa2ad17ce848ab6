// Padded extents and plain shared tile layouts (see tiles.h).
#include "plan/tiles.h"

namespace mugraph::plan {
namespace {

// Largest power of two p <= 8 dividing the number of 16-byte chunks per row, minus one.
int swizzleMaskFor(int64_t cols, graph::DType dtype) {
  const int64_t rowBytes = cols * graph::dtypeBytes(dtype);
  if (rowBytes % 16 != 0) return 0;
  const int64_t chunks = rowBytes / 16;
  int p = 8;
  while (p > 1 && chunks % p != 0) p /= 2;
  return p - 1;
}

}  // namespace

Extent4 padTo4(const graph::Dims& shape) {
  Extent4 extent{1, 1, 1, 1};
  const size_t pad = graph::kMaxRank - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) extent[pad + d] = shape[d];
  return extent;
}

SharedTile rowMajorTile(const graph::Dims& shape, graph::DType dtype, bool swizzle) {
  SharedTile tile;
  tile.dtype = dtype;
  tile.extent = padTo4(shape);
  tile.cols = tile.extent[3];
  tile.rows = tile.extent[0] * tile.extent[1] * tile.extent[2];
  tile.swizzleMask = swizzle ? swizzleMaskFor(tile.cols, dtype) : 0;
  tile.bytes = tile.rows * tile.cols * graph::dtypeBytes(dtype);
  return tile;
}

SharedTile transposedTile(const graph::Dims& shape, graph::DType dtype) {
  SharedTile tile = rowMajorTile(shape, dtype, isSixteenBit(dtype));
  tile.transposed = true;
  tile.rows = tile.extent[0] * tile.extent[1] * tile.extent[3];
  tile.cols = tile.extent[2];
  tile.swizzleMask = isSixteenBit(dtype) ? swizzleMaskFor(tile.cols, dtype) : 0;
  return tile;
}

}  // namespace mugraph::plan
