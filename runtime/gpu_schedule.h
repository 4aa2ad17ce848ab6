// A schedule loaded on the GPU from its manifest and PTX (kernel_launcher.h), with one device
// buffer per input and output and one workspace of its own. It launches
// the whole schedule and times it with CUDA events over graph replays. Kernels that take the
// lengths of dynamic dims run at the lengths their manifest was read at
// (readManifest(path, {{"s", n}})): buffers, grids and length arguments follow them, and the
// same PTX serves every length.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/kernel_launcher.h"
#include "runtime/manifest_reader.h"

namespace mugraph::runtime {

struct TimingStats {
  int repetitions = 0;
  double medianMicroseconds = 0;
  double p10Microseconds = 0;  // spread: 10th and 90th percentile
  double p90Microseconds = 0;
  double minMicroseconds = 0;
};

class GpuSchedule {
 public:
  // `dir` holds the manifest's PTX files; the PTX of the highest arch the device runs is used.
  GpuSchedule(const CudaDriver& driver, Manifest manifest, const std::string& dir);
  ~GpuSchedule();
  GpuSchedule(const GpuSchedule&) = delete;
  GpuSchedule& operator=(const GpuSchedule&) = delete;

  const Manifest& manifest() const { return launcher_.manifest(); }
  const std::string& ptxArch() const { return launcher_.ptxArch(); }

  void upload(const std::string& tensor, const std::vector<uint8_t>& bytes);
  std::vector<uint8_t> download(const std::string& tensor) const;
  void poison(const std::string& tensor);  // every byte 0xFF: NaN in f16, bf16 and f32
  // Every input and output buffer is followed by kGuardBytes of 0xFF: the tensors whose
  // guard a kernel changed (it wrote past their end, e.g. past a partial tile's last element).
  std::vector<std::string> writtenPastTheirEnd() const;
  static constexpr size_t kGuardBytes = 4096;

  void run();  // every kernel once, in order, then synchronize (errors are thrown)
  // Warm-up runs, then `repetitions` timed replays of a CUDA graph of the whole schedule,
  // each after a write of twice the L2's size (outside the timed span): every replay starts
  // with a cold L2, as triton's do_bench times the PyTorch baselines, so neither side is
  // timed on operands the previous replay left in the cache.
  TimingStats time(int warmup, int repetitions);

 private:
  CUdeviceptr pointerOf(const std::string& tensor) const;
  void launchAll(CUstream stream);

  const CudaDriver& driver_;
  KernelLauncher launcher_;
  std::map<std::string, CUdeviceptr> buffers_;  // inputs and outputs
  CUdeviceptr workspace_ = 0;
  CUstream stream_ = nullptr;
};

}  // namespace mugraph::runtime
