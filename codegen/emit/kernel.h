// CUDA C++ for a schedule whose kernels are all block graphs: one
// `extern "C" __global__` kernel per block graph, named mugraph_k<index>_<kernel name>,
// shapes compiled in as constants, computing exactly what verify/interpreter.h computes
// (in f32; tiles feeding tensor-core matmuls are rounded to their declared 16-bit dtype).
// The source includes only "mugraph_device.cuh" (device_header.h), so NVRTC needs nothing
// from disk.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_abi.h"
#include "graph/ir.h"
#include "plan/schedule_plan.h"

namespace mugraph::codegen {

struct EmittedKernel {
  std::string entry;
  std::array<int64_t, graph::kGridAxes> grid{1, 1, 1};
  // Where the kernel takes the dynamic dims' lengths: its grid as they give it (`grid` is the
  // grid at the reference lengths).
  std::optional<graph::KernelLaunchCounts> launchCounts;
  // Thread-block clusters, fixed in the kernel (__cluster_dims__): launches need not set them.
  std::array<int64_t, graph::kGridAxes> cluster{1, 1, 1};
  int threads = 128;
  int64_t dynamicSharedBytes = 0;
  // Tensor maps the kernel takes by value after its pointer parameters (sm_90 warpgroup
  // kernels only), in parameter order.
  std::vector<plan::TensorMapDesc> tensorMaps;
};

struct EmittedSource {
  std::string source;                  // kernel.cu
  std::vector<EmittedKernel> kernels;  // launch order
  ScheduleAbi abi;
  // Uses instructions of the architecture-specific target (sm_90a: wgmma, setmaxnreg): NVRTC
  // compiles it for that target, whose PTX runs on that architecture only.
  bool archSpecific = false;
};

// Prints a planned schedule; every decision (tiles, layouts, stages, shared-memory offsets
// and bytes) is the plan's.
EmittedSource emitSchedule(const plan::SchedulePlan& plan);

}  // namespace mugraph::codegen
