// mugraph's device helpers, included by every generated kernel.cu. Embedded into the mugraph
// binary at build time and handed to NVRTC as an in-memory header, so generated code needs
// no CUDA headers at all (no cuda_fp16.h, no CUTLASS): half types are raw 16-bit values
// converted with PTX cvt, and the fast paths use cp.async, ldmatrix and mma.sync directly.
// Requires sm_80 or newer (cp.async, bf16 mma).
#pragma once

namespace mg {

// Storage types of 16-bit floats: plain bits, converted explicitly, so no operator can
// silently compute in half precision. All arithmetic in generated code is f32.
struct f16 {
  unsigned short bits;
};
struct bf16 {
  unsigned short bits;
};

// The PTX primitives (conversions, cp.async, ldmatrix, mma) sit together here so that tests
// can swap them for CPU emulations (MUGRAPH_HOST_EMULATION, see tests/codegen/emulation/)
// and run everything else in this header and in generated code unchanged.
#ifdef MUGRAPH_HOST_EMULATION
#include "mugraph_emulation.h"
#else
__device__ __forceinline__ float half_to_f32(unsigned short bits) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
  return f;
}
__device__ __forceinline__ unsigned short f32_to_half(float x) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
__device__ __forceinline__ unsigned short f32_to_bfloat16(float x) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Asynchronous global -> shared copies (sm_80+). Bytes is 4, 8 or 16; both addresses
// must be aligned to it. 16-byte copies bypass L1 (.cg); smaller ones cannot.
template <int Bytes>
__device__ __forceinline__ void cp_async(void* shared, const void* global) {
  if constexpr (Bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(shared)),
                 "l"(global));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(shared_address(shared)),
                 "l"(global), "n"(Bytes));
  }
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
// Waits until at most `Pending` committed groups are still in flight.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
}

// Four 8x8 matrices of 16-bit elements; lane i gives the address of row i % 8 of matrix i / 8.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

// c += a * b for one m16n8k16 tile, f32 accumulators; the pointer argument only picks the
// element type.
__device__ __forceinline__ void mma_m16n8k16(float* c, const unsigned (&a)[4],
                                             const unsigned (&b)[2], const f16*) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_m16n8k16(float* c, const unsigned (&a)[4],
                                             const unsigned (&b)[2], const bf16*) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

__device__ __forceinline__ float to_f32(float x) {
  return x;
}
__device__ __forceinline__ float to_f32(f16 x) {
  return half_to_f32(x.bits);
}
__device__ __forceinline__ float to_f32(bf16 x) {
  return __uint_as_float(static_cast<unsigned>(x.bits) << 16);
}

template <class T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ f16 from_f32<f16>(float x) {
  return f16{f32_to_half(x)};
}
template <>
__device__ __forceinline__ bf16 from_f32<bf16>(float x) {
  return bf16{f32_to_bfloat16(x)};
}

// Two values as one 32-bit word, `lo` at the lower address (for paired stores).
template <class T>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  return static_cast<unsigned>(from_f32<T>(lo).bits) |
         (static_cast<unsigned>(from_f32<T>(hi).bits) << 16);
}

// Two adjacent values stored with one 4- or 8-byte write (the address must be aligned).
struct alignas(8) Float2 {
  float x, y;
};
__device__ __forceinline__ void store_pair(float* p, float lo, float hi) {
  *reinterpret_cast<Float2*>(p) = Float2{lo, hi};
}
__device__ __forceinline__ void store_pair(f16* p, float lo, float hi) {
  *reinterpret_cast<unsigned*>(p) = pack2<f16>(lo, hi);
}
__device__ __forceinline__ void store_pair(bf16* p, float lo, float hi) {
  *reinterpret_cast<unsigned*>(p) = pack2<bf16>(lo, hi);
}

// 1, 2 or 4 packed 32-bit words stored with one 4-, 8- or 16-byte write (aligned address).
template <int Words>
struct alignas(4 * Words) WordChunk {
  unsigned w[Words];
};
template <int Words>
__device__ __forceinline__ void store_words(void* to, const unsigned (&words)[Words]) {
  WordChunk<Words> chunk;
#pragma unroll
  for (int i = 0; i < Words; ++i) chunk.w[i] = words[i];
  *static_cast<WordChunk<Words>*>(to) = chunk;
}

// Element-wise ops as the interpreter defines them (verify/number_domain.h), in f32.
__device__ __forceinline__ float silu(float x) {
  return x / (1.0f + expf(-x));
}
__device__ __forceinline__ float max_of(float acc, float x) {
  return acc < x ? x : acc;
}

// Shared-memory tiles of 16-byte chunks may be XOR-swizzled so that ldmatrix and the
// row-wise cp.async copies hit distinct banks: chunk c of row r lives at c ^ (r & mask).
template <int ChunkElems>
__device__ __forceinline__ int swizzle(int row, int col, int cols, int mask) {
  return row * cols + ((((col / ChunkElems) ^ (row & mask)) * ChunkElems) | (col % ChunkElems));
}

// Synchronous copies of 2..16 bytes through registers (used where cp.async cannot be:
// scattered or 2-byte elements).
template <int Bytes>
struct alignas(Bytes) Chunk {
  unsigned char bytes[Bytes];
};
template <int Bytes>
__device__ __forceinline__ void copy_chunk(void* to, const void* from) {
  *static_cast<Chunk<Bytes>*>(to) = *static_cast<const Chunk<Bytes>*>(from);
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

// Loads a 16x16 operand fragment of 16-bit elements for mma.m16n8k16 from a shared tile,
// as four 8x8 matrices in the order (r0-7,c0-7), (r8-15,c0-7), (r0-7,c8-15), (r8-15,c8-15)
// of a logical [R][C] operand (A: R = M, C = K; B: R = N, C = K). Stored as [R][C]
// (Transposed = false) or as [C][R] (Transposed = true, ldmatrix .trans).
// With RRows < 16 (an operand of fewer than 16 rows, stored [R][C]) rows past RRows - 1 read
// row RRows - 1 again: their products land in fragment rows that the caller discards.
template <bool Transposed, int RRows = 16>
__device__ __forceinline__ void load_fragment_x4(unsigned (&r)[4], const void* tile, int cols,
                                                 int mask, int r0, int c0) {
  static_assert(RRows >= 16 || !Transposed, "a short operand is stored [R][C]");
  const int lane = threadIdx.x & 31;
  int row, col;
  if constexpr (Transposed) {
    row = c0 + (lane & 7) + ((lane >> 4) << 3);
    col = r0 + (((lane >> 3) & 1) << 3);
  } else {
    row = r0 + (lane & 7) + (((lane >> 3) & 1) << 3);
    if constexpr (RRows < 16) row = row < RRows ? row : RRows - 1;
    col = c0 + ((lane >> 4) << 3);
  }
  const void* address = static_cast<const unsigned short*>(tile) + swizzle<8>(row, col, cols, mask);
  if constexpr (Transposed) {
    ldmatrix_x4_trans(r, address);
  } else {
    ldmatrix_x4(r, address);
  }
}

// One warp's share of C[M][N] += A[M][K] * B[K][N] from shared tiles: an (MI*16) x (NI*8)
// block at (m0, n0), K in steps of 16. c holds MI*NI fragments of 4 floats; element r of
// fragment (mi, ni) is C[m0 + mi*16 + lane/4 + 8*(r/2)][n0 + ni*8 + 2*(lane%4) + r%2].
// A is stored [M][K] or, with AStoredKM, [K][M]; B is stored [N][K] or, with BStoredKN,
// [K][N]. cols/mask describe each stored tile (row length and swizzle). ARows < 16: A has
// only that many rows (MI = 1, stored [M][K]); fragment rows from ARows on are padding.
template <class T, int MI, int NI, int K, bool AStoredKM, bool BStoredKN, int ARows = 16>
__device__ __forceinline__ void mma_warp_tile(float* c, const T* a, int aCols, int aMask,
                                              const T* b, int bCols, int bMask, int m0, int n0) {
  static_assert(NI % 2 == 0, "B fragments are loaded 16 columns at a time");
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16) {
    unsigned af[MI][4];
    unsigned bf[NI][2];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      load_fragment_x4<AStoredKM, ARows>(af[mi], a, aCols, aMask, m0 + mi * 16, k0);
    }
#pragma unroll
    for (int nj = 0; nj < NI / 2; ++nj) {
      unsigned r[4];
      load_fragment_x4<BStoredKN>(r, b, bCols, bMask, n0 + nj * 16, k0);
      bf[2 * nj][0] = r[0];
      bf[2 * nj + 1][0] = r[1];
      bf[2 * nj][1] = r[2];
      bf[2 * nj + 1][1] = r[3];
    }
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) mma_m16n8k16(c + (mi * NI + ni) * 4, af[mi], bf[ni], a);
    }
  }
}

// Warp-wide reductions with shuffles.
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}
__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    x = max_of(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

}  // namespace mg
