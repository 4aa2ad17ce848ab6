// The device library that generated kernels include (codegen/device/), compiled into the
// binary by CMake (codegen/embed_file.cmake) and handed to NVRTC in memory.
#pragma once

#include <span>
#include <string_view>

namespace mugraph::codegen {

// Both views end where a '\0' follows, so NVRTC can take their data() as C strings.
struct DeviceHeader {
  std::string_view name;  // as `#include` names it
  std::string_view source;
};

// The one header a generated kernel includes; it includes the others.
inline constexpr const char* kDeviceHeaderName = "mugraph_device.cuh";

// Every header of the device library, in the order codegen/CMakeLists.txt lists them.
std::span<const DeviceHeader> deviceHeaders();

}  // namespace mugraph::codegen
