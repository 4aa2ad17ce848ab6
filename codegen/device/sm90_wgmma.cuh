// sm_90 warpgroup matrix multiplies (wgmma.mma_async): the shared-memory descriptor, the
// fences and group waits around the asynchronous multiply, setmaxnreg, and the multiplies
// themselves. Used only by kernels the plan puts on the warpgroup path; the emulation build has
// none of them (GPU tests cover them).
#pragma once

namespace mg {

#if !defined(MUGRAPH_HOST_EMULATION) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

// Shared-memory matrix descriptor of wgmma (PTX ISA, "Matrix Descriptor Format"): start
// address, leading and stride byte offsets (each >> 4) and the 128-byte swizzle mode. The
// swizzle pattern repeats every 1024 bytes from a 1024-byte aligned tile base.
__device__ __forceinline__ unsigned long long wgmma_descriptor_128b(const void* start,
                                                                    unsigned leadingBytes,
                                                                    unsigned strideBytes) {
  return static_cast<unsigned long long>((shared_address(start) & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>((leadingBytes & 0x3FFFF) >> 4) << 16) |
         (static_cast<unsigned long long>((strideBytes & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

// Descriptor `d` advanced by `bytes` (a multiple of 16) in shared memory: one add where a
// descriptor built anew masks, shifts and merges its fields again. The start address field
// (bits 0-13, address >> 4) holds every shared address below 256 KiB, more than a block has,
// so the sum never carries into the leading byte offset.
__device__ __forceinline__ unsigned long long wgmma_descriptor_advance(unsigned long long d,
                                                                      unsigned bytes) {
  return d + (bytes >> 4);
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// wgmma.fence: orders register accesses of the accumulators before the next wgmma.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most `Pending` committed wgmma groups of this warp are in flight.
template <int Pending>
__device__ __forceinline__ void wgmma_wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
// Keeps the accumulator registers in place across the asynchronous wgmma (no moves).
template <int N>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// The same for A fragments held in registers (P of attention's P·V).
template <int M, int N>
__device__ __forceinline__ void wgmma_fence_operands(unsigned (&a)[M][N]) {
#pragma unroll
  for (int i = 0; i < M; ++i) {
#pragma unroll
    for (int j = 0; j < N; ++j) asm volatile("" : "+r"(a[i][j])::"memory");
  }
}
// setmaxnreg: the producer warpgroup gives registers back, the consumers take them.
template <int Registers>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers));
}
template <int Registers>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Registers));
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL
#endif  // sm_90

}  // namespace mg

// The multiplies, one per result width N and element type, each spelling out all of its
// accumulator registers, are generated at build time from the table in generate_wgmma.cmake:
//
// wgmma_m64n<N>k16<TransA, TransB, ScaleD = 1>(float (&d)[N / 2], unsigned long long a,
//                                  unsigned long long b, const T*):
//   D[64][N] += A[64][16] * B[16][N], operands in shared memory through descriptors, f32
//   accumulators in the wgmma register layout: d[4*j + r] is row 16*warp + lane/4 + 8*(r/2),
//   column 8*j + 2*(lane%4) + r%2 (warp and lane within the warpgroup). TransA = 1: A is
//   M-major (else K-major); TransB = 1: B is N-major (else K-major). The pointer picks the
//   type (f16 or bf16). ScaleD = 0: D = A * B, whatever d held (a product's first k-step,
//   with no zeroing of the accumulators before it).
//
// wgmma_m64n<N>k16_rs<TransB>(float (&d)[N / 2], const unsigned (&a)[4],
//                             unsigned long long b, const T*):
//   the same with A from registers: a[0..3] hold the f16x2 / bf16x2 pairs of rows lane/4 and
//   lane/4 + 8 (of the warp's 16), columns 2*(lane%4) and 8 + that, in the order (row, col),
//   (row + 8, col), (row, col + 8), (row + 8, col + 8): exactly the accumulator layout of a
//   previous wgmma's columns [16k, 16k + 16), packed.
#include "sm90_wgmma_shapes.cuh"
