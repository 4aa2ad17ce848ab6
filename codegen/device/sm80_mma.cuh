// sm_80 tensor cores: mma.sync m16n8k16 with f32 accumulators, the fragments it reads from
// swizzled shared tiles (ldmatrix), and one warp's share of a tile product.
#pragma once

namespace mg {

// The emulation build (tests/codegen/emulation/mugraph_emulation.h) defines this on the CPU.
#ifndef MUGRAPH_HOST_EMULATION
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
// k_base: the first of the K columns this warp multiplies (a warp's share of a K split).
template <class T, int MI, int NI, int K, bool AStoredKM, bool BStoredKN, int ARows = 16>
__device__ __forceinline__ void mma_warp_tile(float* c, const T* a, int aCols, int aMask,
                                              const T* b, int bCols, int bMask, int m0, int n0,
                                              int k_base = 0) {
  static_assert(NI % 2 == 0, "B fragments are loaded 16 columns at a time");
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16) {
    unsigned af[MI][4];
    unsigned bf[NI][2];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      load_fragment_x4<AStoredKM, ARows>(af[mi], a, aCols, aMask, m0 + mi * 16, k_base + k0);
    }
#pragma unroll
    for (int nj = 0; nj < NI / 2; ++nj) {
      unsigned r[4];
      load_fragment_x4<BStoredKN>(r, b, bCols, bMask, n0 + nj * 16, k_base + k0);
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

}  // namespace mg
