// The device helpers that generated kernels include ("mugraph_device.cuh", from
// codegen/device/), compiled into the binary by CMake and handed to NVRTC in memory.
#pragma once

#include <string_view>

namespace mugraph::codegen {

inline constexpr const char* kDeviceHeaderName = "mugraph_device.cuh";

std::string_view deviceHeaderSource();

}  // namespace mugraph::codegen
