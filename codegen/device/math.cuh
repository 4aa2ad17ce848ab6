// Element-wise ops as the interpreter defines them (verify/number_domain.h), in f32, and the
// warp-wide reductions of the general path.
#pragma once

namespace mg {

#ifndef MUGRAPH_HOST_EMULATION
// 2^x on the special-function unit. Relative error about 2^-22; results below 2^-126 flush to
// 0; -inf gives 0, +inf and overflow give +inf, NaN stays NaN.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 1/x on the special-function unit (MUFU.RCP): relative error about 2^-23; 1/inf is 0, 1/0 is
// inf. Where x / y compiles to IEEE division, ptxas adds a branch to a slow-path subroutine for
// each element, which keeps the loads around it from being scheduled together (measured: a
// GEMM whose epilogue applied silu with IEEE division ran 40% slower than its plain GEMM).
__device__ __forceinline__ float reciprocal_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
#endif

// e^x as 2^(x log2 e): two instructions where expf takes about ten, which matters where every
// attention score passes through it. Rounding the product adds |x| 2^-24 to exp2_approx's
// error (below 1e-5 relative for |x| < 88), far inside the f16, bf16 and f32 tolerances.
__device__ __forceinline__ float exp(float x) {
  return exp2_approx(x * 1.4426950408889634f);
}

// For x below about -88, exp(-x) overflows to +inf, its reciprocal is 0 and so is the result,
// the limit: no branch on the sign is needed, and there is no inf/inf that could give NaN.
__device__ __forceinline__ float sigmoid(float x) {
  return reciprocal_approx(1.0f + exp(-x));
}
__device__ __forceinline__ float silu(float x) {
  return x * sigmoid(x);
}

// tanh.approx.f32 (sm_75 on): one MUFU instruction, absolute error about 2^-11, below the f16
// and bf16 rounding of the values it feeds; tanhf elsewhere.
__device__ __forceinline__ float tanh(float x) {
#if __CUDA_ARCH__ >= 750
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return tanhf(x);
#endif
}

// Whether causal_mask (graph/ops.h) keeps column `col` of `cols` keys in row `row`, the query
// row % queries of its sequence, aligned to the end of the keys.
__device__ __forceinline__ bool causal_kept(int row, int col, int cols, int queries) {
  return col <= row % queries + (cols - queries);
}

// causal_kept where the queries are the whole row dim (queries= absent): every real row is its
// own query position, so no remainder is taken (a division per element where the row count is
// a run-time length). A padding row past the rows sees more keys than the remainder would give
// it; its values stay finite and are never stored.
__device__ __forceinline__ bool causal_kept_rows(int row, int col, int cols, int rows) {
  return col <= row + (cols - rows);
}

// graph::causalIterations (graph/tile_splits.h), for the kernel: a block whose query rows are
// `first`..`last` of the whole row dim, looping over key tiles of
// `kv` columns from column `col0`: the iterations that hold a kept column for one of its rows
// (at most `loop`). The tiles after them are entirely above the diagonal: all -inf, nothing
// to a safe softmax, so they are never loaded.
__device__ __forceinline__ int causal_iterations(int first, int last, int col0, int kv, int cols,
                                                 int queries, int loop) {
  const int lastQuery = first / queries == last / queries ? last % queries : queries - 1;
  const int lastCol = lastQuery + cols - queries;
  if (lastCol < col0) return 0;
  const int needed = (lastCol - col0) / kv + 1;
  return needed < loop ? needed : loop;
}

// Whether the key tile of `kv` columns from column `col0` is kept whole for rows first..last:
// only tiles across the diagonal need the mask.
__device__ __forceinline__ bool causal_tile_kept(int first, int last, int col0, int kv, int cols,
                                                 int queries) {
  const int firstQuery = first / queries == last / queries ? first % queries : 0;
  return col0 + kv - 1 <= firstQuery + cols - queries;
}

// The interpreter's max (std::max) on every number and infinity, in one instruction (FMNMX)
// where the comparison and select took two. Only a NaN operand differs: fmaxf returns the
// other operand, std::max returns its first operand. A NaN score still makes the softmax's
// result NaN through its exp, in both.
__device__ __forceinline__ float max_of(float acc, float x) {
  return fmaxf(acc, x);
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
