#include "codegen/runtime/half_precision.h"

#include <cmath>

namespace mugraph::codegen {
namespace {

uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

uint16_t floatToHalfBits(float value) {
  const uint32_t u = floatBits(value);
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

float halfBitsToFloat(uint16_t bits) {
  const uint32_t sign = (bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float value = static_cast<float>(mantissa) / 16777216.0f;  // m · 2^-24
    return sign ? -value : value;
  }
  if (exponent == 31) return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  return bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t floatToBfloat16Bits(float value) {
  const uint32_t u = floatBits(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

float bfloat16BitsToFloat(uint16_t bits) {
  return bitsFloat(uint32_t{bits} << 16);
}

std::vector<uint8_t> encode(const std::vector<double>& values, graph::DType dtype,
                            std::vector<double>* rounded) {
  const size_t width = static_cast<size_t>(graph::dtypeBytes(dtype));
  std::vector<uint8_t> bytes(values.size() * width);
  if (rounded) rounded->resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const float f = static_cast<float>(values[i]);
    float asRead = f;
    if (dtype == graph::DType::F32) {
      std::memcpy(&bytes[i * 4], &f, 4);
    } else {
      const uint16_t bits =
          dtype == graph::DType::F16 ? floatToHalfBits(f) : floatToBfloat16Bits(f);
      std::memcpy(&bytes[i * 2], &bits, 2);
      asRead = dtype == graph::DType::F16 ? halfBitsToFloat(bits) : bfloat16BitsToFloat(bits);
    }
    if (rounded) (*rounded)[i] = asRead;
  }
  return bytes;
}

std::vector<double> decode(const std::vector<uint8_t>& bytes, graph::DType dtype) {
  const size_t width = static_cast<size_t>(graph::dtypeBytes(dtype));
  std::vector<double> values(bytes.size() / width);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == graph::DType::F32) {
      float f;
      std::memcpy(&f, &bytes[i * 4], 4);
      values[i] = f;
    } else {
      uint16_t bits;
      std::memcpy(&bits, &bytes[i * 2], 2);
      values[i] = dtype == graph::DType::F16 ? halfBitsToFloat(bits) : bfloat16BitsToFloat(bits);
    }
  }
  return values;
}

}  // namespace mugraph::codegen
