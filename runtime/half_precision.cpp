#include "runtime/half_precision.h"

#include <cstring>

namespace mugraph::runtime {

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

}  // namespace mugraph::runtime
