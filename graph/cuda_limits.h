// Limits of the CUDA programming model that every architecture mugraph targets shares
// (compute capability 8.0 and up). They are IR rules: a block graph that breaks one is
// invalid on any GPU. What differs between architectures is in plan/target.h.
#pragma once

#include <cstdint>

namespace mugraph::graph {

inline constexpr int kWarpSize = 32;
inline constexpr int kMaxThreadsPerBlock = 1024;  // a block is a whole number of warps
// Threads resident on one multiprocessor at once (every block of a kernel's occupancy).
inline constexpr int kMaxThreadsPerSm = 2048;
inline constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;
inline constexpr int64_t kMaxGridYZ = 65535;

// Grid extent limit of axis 0 (x), 1 (y) or 2 (z).
constexpr int64_t maxGridExtent(int axis) {
  return axis == 0 ? kMaxGridX : kMaxGridYZ;
}

}  // namespace mugraph::graph
