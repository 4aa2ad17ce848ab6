// The PTX primitives of codegen/device/ (types.cuh, sm80_copy.cuh, sm80_mma.cuh) for
// MUGRAPH_HOST_EMULATION builds, on top of cuda_emulation.h.
#pragma once

namespace mg {

struct f16;
struct bf16;

inline float half_to_f32(unsigned short bits) {
  return ::mg_emu::halfBitsToFloat(bits);
}
inline unsigned short f32_to_half(float x) {
  return ::mg_emu::floatToHalfBits(x);
}
inline unsigned short f32_to_bfloat16(float x) {
  return ::mg_emu::floatToBfloat16Bits(x);
}

template <int Bytes>
inline void cp_async(void* shared, const void* global) {
  ::mg_emu::asyncCopy(shared, global, Bytes);
}
inline float exp2_approx(float x) {
  return ::exp2f(x);
}
inline float reciprocal_approx(float x) {
  return 1.0f / x;
}
inline float negative_infinity() {
  return -__builtin_huge_valf();
}
template <int Bytes>
inline void cp_async_zfill(void* shared, const void* global, int srcBytes) {
  ::mg_emu::asyncCopy(shared, global, Bytes, srcBytes);
}
inline void cp_async_commit() {
  ::mg_emu::commitGroup();
}
template <int Pending>
inline void cp_async_wait() {
  ::mg_emu::waitGroups(Pending);
}

inline void ldmatrix_x4(unsigned (&r)[4], const void* row) {
  ::mg_emu::ldmatrix(r, row, false);
}
inline void ldmatrix_x4_trans(unsigned (&r)[4], const void* row) {
  ::mg_emu::ldmatrix(r, row, true);
}

inline void mma_m16n8k16(float* c, const unsigned (&a)[4], const unsigned (&b)[2], const f16*) {
  ::mg_emu::mma(c, a, b, false);
}
inline void mma_m16n8k16(float* c, const unsigned (&a)[4], const unsigned (&b)[2], const bf16*) {
  ::mg_emu::mma(c, a, b, true);
}

}  // namespace mg
