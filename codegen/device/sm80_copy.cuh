// sm_80 copies into shared memory: cp.async (with zero fill for partial tiles) and ldmatrix.
// The emulation build (tests/codegen/emulation/mugraph_emulation.h) defines these on the CPU.
#pragma once

namespace mg {

#ifndef MUGRAPH_HOST_EMULATION
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
// A copy of which only the first `srcBytes` (0 to Bytes) exist in global memory; the rest of
// the chunk is zero-filled: the padding of a partial tile (graph/tile_splits.h).
template <int Bytes>
__device__ __forceinline__ void cp_async_zfill(void* shared, const void* global, int srcBytes) {
  if constexpr (Bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared)),
                 "l"(global), "r"(srcBytes));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(shared_address(shared)),
                 "l"(global), "n"(Bytes), "r"(srcBytes));
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
#endif

}  // namespace mg
