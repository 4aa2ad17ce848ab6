// Element-wise ops as the interpreter defines them (verify/number_domain.h), in f32, and the
// warp-wide reductions of the general path.
#pragma once

namespace mg {

__device__ __forceinline__ float silu(float x) {
  return x / (1.0f + expf(-x));
}
// For x below about -88, expf(-x) overflows to +inf and the quotient is 0, the limit: no
// branch on the sign is needed, and there is no inf/inf that could give NaN.
__device__ __forceinline__ float sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

__device__ __forceinline__ float max_of(float acc, float x) {
  return acc < x ? x : acc;
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
