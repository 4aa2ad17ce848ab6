// Addressing of shared-memory tiles: the real extents of partial tiles, the XOR swizzle of
// 16-byte chunks, and chunked reads of 16-bit elements.
#pragma once

namespace mg {

// Real elements of a tile of a partial split (graph/tile_splits.h): block part `part` of
// `blockTile` elements of a dim of `n`, iteration `it` of tiles of `tile`.
__device__ __forceinline__ int tile_extent(long long n, long long blockTile, long long tile,
                                           long long part, long long it) {
  const long long start = part * blockTile + it * tile;
  const long long partEnd = (part + 1) * blockTile < n ? (part + 1) * blockTile : n;
  const long long real = partEnd - start < tile ? partEnd - start : tile;
  return real > 0 ? static_cast<int>(real) : 0;
}
// Iterations of block part `part` that hold real elements, of `iterations` (a dim of `n` cut
// into parts of `blockTile` and tiles of `tile`; graph/tile_splits.h): 0 in a part past n.
__device__ __forceinline__ int part_iterations(long long n, long long blockTile, long long tile,
                                               long long part, int iterations) {
  const long long end = (part + 1) * blockTile < n ? (part + 1) * blockTile : n;
  if (end <= part * blockTile) return 0;
  const long long real = (end - part * blockTile + tile - 1) / tile;
  return real < iterations ? static_cast<int>(real) : iterations;
}
// n clamped to [0, chunk]: the real elements of a chunk that may straddle a tile's end.
__device__ __forceinline__ int clamp_count(int n, int chunk) {
  return n < 0 ? 0 : (n > chunk ? chunk : n);
}

// Shared-memory tiles of 16-byte chunks may be XOR-swizzled so that ldmatrix and the
// row-wise cp.async copies hit distinct banks: chunk c of row r lives at c ^ (r & mask).
template <int ChunkElems>
__device__ __forceinline__ int swizzle(int row, int col, int cols, int mask) {
  return row * cols + ((((col / ChunkElems) ^ (row & mask)) * ChunkElems) | (col % ChunkElems));
}

// Dot product of 8 consecutive 16-bit elements of a and b, each 16-byte aligned: one
// shared-memory load per operand instead of eight.
template <class T>
__device__ __forceinline__ float dot8(const T* a, const T* b) {
  const Chunk<16> chunkA = *reinterpret_cast<const Chunk<16>*>(a);
  const Chunk<16> chunkB = *reinterpret_cast<const Chunk<16>*>(b);
  const T* x = reinterpret_cast<const T*>(chunkA.bytes);
  const T* y = reinterpret_cast<const T*>(chunkB.bytes);
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) sum += to_f32(x[j]) * to_f32(y[j]);
  return sum;
}

}  // namespace mg
