// Storage types of 16-bit floats and the conversions and packed stores generated code uses.
// Plain bits, converted explicitly with PTX cvt, so no CUDA header (cuda_fp16.h) is needed and
// no operator can silently compute in half precision: all arithmetic in generated code is f32.
#pragma once

namespace mg {

struct f16 {
  unsigned short bits;
};
struct bf16 {
  unsigned short bits;
};

// The emulation build (tests/codegen/emulation/mugraph_emulation.h) defines these on the CPU.
#ifndef MUGRAPH_HOST_EMULATION
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

// The identity of max: where a partial tile's row may hold only its real elements.
__device__ __forceinline__ float negative_infinity() {
  return __int_as_float(0xff800000);
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

// N consecutive elements read with one N * sizeof(T)-byte load (aligned address) into f32
// registers, and written back from them with one store. 16-bit elements travel in 32-bit words
// (two each, the lower address in the low half) and are taken apart and put together with
// shifts, never through a pointer of another type into a byte buffer (NVRTC split such a store
// into bytes and lost some of them).
template <int N, class T>
__device__ __forceinline__ void load_f32(const T* from, float* to) {
  if constexpr (sizeof(T) == 4) {
    const WordChunk<N> chunk = *reinterpret_cast<const WordChunk<N>*>(from);
#pragma unroll
    for (int v = 0; v < N; ++v) to[v] = __uint_as_float(chunk.w[v]);
  } else if constexpr (N == 1) {
    to[0] = to_f32(*from);
  } else {
    const WordChunk<N / 2> chunk = *reinterpret_cast<const WordChunk<N / 2>*>(from);
#pragma unroll
    for (int w = 0; w < N / 2; ++w) {
      to[2 * w] = to_f32(T{static_cast<unsigned short>(chunk.w[w] & 0xffffu)});
      to[2 * w + 1] = to_f32(T{static_cast<unsigned short>(chunk.w[w] >> 16)});
    }
  }
}
template <int N, class T>
__device__ __forceinline__ void store_f32(T* to, const float* from) {
  if constexpr (sizeof(T) == 4) {
    unsigned words[N];
#pragma unroll
    for (int v = 0; v < N; ++v) words[v] = __float_as_uint(from[v]);
    store_words<N>(to, words);
  } else if constexpr (N == 1) {
    *to = from_f32<T>(from[0]);
  } else {
    unsigned words[N / 2];
#pragma unroll
    for (int w = 0; w < N / 2; ++w) words[w] = pack2<T>(from[2 * w], from[2 * w + 1]);
    store_words<N / 2>(to, words);
  }
}

// Programmatic dependent launch (sm_90). Every generated kernel starts with both calls:
// launch_dependents lets the next kernel of the stream be scheduled as soon as every block of
// this one has started (its blocks then wait, resident, instead of paying a launch after this
// kernel drains), and wait_prior_grids returns once the kernels before this one have finished
// and their writes are visible. Launched without the programmatic-serialization attribute
// (or on sm_80, where both are empty) the stream already orders the kernels.
__device__ __forceinline__ void launch_dependents() {
#if !defined(MUGRAPH_HOST_EMULATION) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_prior_grids() {
#if !defined(MUGRAPH_HOST_EMULATION) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

}  // namespace mg
