// A schedule's kernels loaded from its manifest and PTX, launched on buffers the caller owns:
// the one place that turns a manifest into driver calls (module, entries, shared-memory
// limits, tensor maps, launch order). GpuSchedule launches it on buffers of its own; the C API
// (capi/mugraph.h) on a framework's tensors, on the framework's current stream.
#pragma once

#include <string>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/manifest_reader.h"

namespace mugraph::runtime {

class KernelLauncher {
 public:
  // `dir` holds the manifest's PTX files; the PTX of the highest arch the device runs is used.
  // Throws UserError for a manifest this GPU cannot run.
  KernelLauncher(const CudaDriver& driver, Manifest manifest, const std::string& dir);
  // The manifest `dir`/manifest.json; one whose kernels take the lengths of dynamic dims is
  // read at each dim's max until setLengths says otherwise.
  KernelLauncher(const CudaDriver& driver, const std::string& dir);
  ~KernelLauncher();
  KernelLauncher(const KernelLauncher&) = delete;
  KernelLauncher& operator=(const KernelLauncher&) = delete;

  const Manifest& manifest() const { return manifest_; }
  const std::string& ptxArch() const { return ptxArch_; }

  // Every kernel once, in order, on `stream`, with nothing synchronized: `tensors` holds the
  // address of each input and output in manifest order (inputs, then outputs), `workspace`
  // the base of manifest().workspaceBytes. Tensor maps are encoded for these addresses (and
  // kept while the addresses stay the same, so replays and graph captures encode nothing).
  void launch(const std::vector<CUdeviceptr>& tensors, CUdeviceptr workspace, CUstream stream);

  // The dynamic dims the kernels take the lengths of (manifest order, with their ranges);
  // empty for a static manifest.
  const std::vector<graph::DynamicDim>& dims() const { return dims_; }
  // Launches from now on run at `lengths` (one per dim, inside its range; UserError
  // otherwise): shapes, grids, tensor maps and length arguments follow them. Re-reads the
  // manifest's JSON, kept in memory, only when the lengths change.
  void setLengths(const graph::DimValues& lengths);

  // The inputs and outputs, in the order launch() takes their addresses.
  std::vector<const ManifestTensor*> boundTensors() const;

 private:
  KernelLauncher(const CudaDriver& driver, nlohmann::json document, const std::string& dir);
  CUdeviceptr addressOf(const std::string& tensor) const;
  void encodeTensorMaps();

  const CudaDriver& driver_;
  Manifest manifest_;
  std::string manifestPath_;
  nlohmann::json document_;  // kept for setLengths where the manifest has dims
  std::vector<graph::DynamicDim> dims_;
  std::string ptxArch_;
  bool programmaticLaunch_ = false;  // launched with programmatic stream serialization
  CUmodule module_ = nullptr;
  std::vector<CUfunction> functions_;
  std::vector<CUdeviceptr> tensors_;  // of the last launch
  CUdeviceptr workspace_ = 0;
  std::vector<std::vector<CUtensorMap>> tensorMaps_;  // per kernel, for tensors_
};

}  // namespace mugraph::runtime
