// Host-side conversions between double and the device storage formats (f16, bf16, f32),
// round-to-nearest-even, so inputs can be rounded exactly as the GPU will read them.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "graph/types.h"
#include "runtime/half_bits.h"  // the scalar conversions

namespace mugraph::runtime {

// Packs `values` into the bytes of `dtype`; returns the values as the device will read them.
std::vector<uint8_t> encode(const std::vector<double>& values, graph::DType dtype,
                            std::vector<double>* rounded = nullptr);
std::vector<double> decode(const std::vector<uint8_t>& bytes, graph::DType dtype);

}  // namespace mugraph::runtime
