// Bit conversions between float and the 16-bit storage formats (f16, bf16), round to nearest
// even, exactly as the GPU converts. Header-only and free of other project headers, so the
// host runtime and the CPU emulation of generated kernels (tests/codegen/emulation), which is
// compiled on its own, share this one definition.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mugraph::runtime {

namespace half_bits_detail {
inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace half_bits_detail

inline uint16_t floatToHalfBits(float value) {
  using half_bits_detail::bitsFloat;
  const uint32_t u = half_bits_detail::floatBits(value);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow: inf
  if (magnitude < 0x38800000u) {  // subnormal or zero in f16: round at the 2^-24 grid
    const float scaled = bitsFloat(magnitude) * 16777216.0f;  // x · 2^24, exact
    const auto rounded = static_cast<uint32_t>(std::nearbyint(scaled));
    return static_cast<uint16_t>(sign | rounded);
  }
  // Normal: rebias the exponent and round the mantissa to 10 bits, ties to even.
  const uint32_t exponentAndMantissa = magnitude - 0x38000000u;
  const uint32_t rounding = 0x0fffu + ((exponentAndMantissa >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((exponentAndMantissa + rounding) >> 13));
}

inline float halfBitsToFloat(uint16_t bits) {
  const uint32_t sign = (bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float value = static_cast<float>(mantissa) / 16777216.0f;  // m · 2^-24
    return sign ? -value : value;
  }
  if (exponent == 31) return half_bits_detail::bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  return half_bits_detail::bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline uint16_t floatToBfloat16Bits(float value) {
  const uint32_t u = half_bits_detail::floatBits(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

inline float bfloat16BitsToFloat(uint16_t bits) {
  return half_bits_detail::bitsFloat(uint32_t{bits} << 16);
}

}  // namespace mugraph::runtime
