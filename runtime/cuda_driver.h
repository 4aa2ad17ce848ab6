// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"). A binary linked to
// libcuda does not start on a machine without a driver; this one starts everywhere and says
// plainly, when a GPU command runs, that there is no driver or no device.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace mugraph::runtime {

// X(member, type-giving function, symbol names to try in order)
#define MUGRAPH_CUDA_DRIVER_FUNCTIONS(X)                                                 \
  X(init, cuInit, "cuInit")                                                              \
  X(deviceGetCount, cuDeviceGetCount, "cuDeviceGetCount")                                \
  X(deviceGet, cuDeviceGet, "cuDeviceGet")                                               \
  X(deviceGetName, cuDeviceGetName, "cuDeviceGetName")                                   \
  X(deviceGetAttribute, cuDeviceGetAttribute, "cuDeviceGetAttribute")                    \
  X(driverGetVersion, cuDriverGetVersion, "cuDriverGetVersion")                          \
  X(primaryCtxRetain, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")              \
  X(ctxSetCurrent, cuCtxSetCurrent, "cuCtxSetCurrent")                                   \
  X(ctxSynchronize, cuCtxSynchronize, "cuCtxSynchronize")                                \
  X(moduleLoadData, cuModuleLoadData, "cuModuleLoadData")                                \
  X(moduleUnload, cuModuleUnload, "cuModuleUnload")                                      \
  X(moduleGetFunction, cuModuleGetFunction, "cuModuleGetFunction")                       \
  X(funcSetAttribute, cuFuncSetAttribute, "cuFuncSetAttribute")                          \
  X(launchKernelEx, cuLaunchKernelEx, "cuLaunchKernelEx")                                \
  X(memAlloc, cuMemAlloc, "cuMemAlloc_v2")                                               \
  X(memFree, cuMemFree, "cuMemFree_v2")                                                  \
  X(memcpyHtoD, cuMemcpyHtoD, "cuMemcpyHtoD_v2")                                         \
  X(memcpyDtoH, cuMemcpyDtoH, "cuMemcpyDtoH_v2")                                         \
  X(memsetD8, cuMemsetD8, "cuMemsetD8_v2")                                               \
  X(memsetD8Async, cuMemsetD8Async, "cuMemsetD8Async")                                   \
  X(streamCreate, cuStreamCreate, "cuStreamCreate")                                      \
  X(streamDestroy, cuStreamDestroy, "cuStreamDestroy_v2")                                \
  X(streamSynchronize, cuStreamSynchronize, "cuStreamSynchronize")                       \
  X(streamBeginCapture, cuStreamBeginCapture, "cuStreamBeginCapture_v2")                 \
  X(streamEndCapture, cuStreamEndCapture, "cuStreamEndCapture")                          \
  X(graphInstantiate, cuGraphInstantiate, "cuGraphInstantiateWithFlags")                 \
  X(graphLaunch, cuGraphLaunch, "cuGraphLaunch")                                         \
  X(graphExecDestroy, cuGraphExecDestroy, "cuGraphExecDestroy")                          \
  X(graphDestroy, cuGraphDestroy, "cuGraphDestroy")                                      \
  X(eventCreate, cuEventCreate, "cuEventCreate")                                         \
  X(eventRecord, cuEventRecord, "cuEventRecord")                                         \
  X(eventSynchronize, cuEventSynchronize, "cuEventSynchronize")                          \
  X(eventElapsedTime, cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime") \
  X(eventDestroy, cuEventDestroy, "cuEventDestroy_v2")                                   \
  X(tensorMapEncodeTiled, cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled")              \
  X(getErrorString, cuGetErrorString, "cuGetErrorString")

class CudaDriver {
 public:
  // Loads the driver, initializes it and makes device `ordinal`'s primary context current.
  // Returns null and sets `whyNot` ("no CUDA driver (libcuda.so.1 not found)", "no CUDA
  // device", ...) where that is impossible.
  static std::unique_ptr<CudaDriver> open(std::string& whyNot, int ordinal = 0);
  // The same for the device `choose` picks from the number of devices.
  static std::unique_ptr<CudaDriver> open(std::string& whyNot,
                                          const std::function<int(int deviceCount)>& choose);
  ~CudaDriver();
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  // Throws std::runtime_error naming `what` and the driver's message if `result` is an error.
  void check(CUresult result, const std::string& what) const;
  // Makes the device's context current on the calling thread (open made it current on the
  // opening thread only): before GPU work on another thread, one thread at a time.
  void makeCurrent() const { check(ctxSetCurrent(context_), "cuCtxSetCurrent"); }

  const std::string& deviceName() const { return deviceName_; }
  int computeCapability() const { return computeCapability_; }  // e.g. 90
  int multiprocessors() const { return multiprocessors_; }
  int64_t l2CacheBytes() const { return l2CacheBytes_; }
  int driverVersion() const { return driverVersion_; }

#define MUGRAPH_DECLARE_MEMBER(member, function, ...) decltype(&::function) member = nullptr;
  MUGRAPH_CUDA_DRIVER_FUNCTIONS(MUGRAPH_DECLARE_MEMBER)
#undef MUGRAPH_DECLARE_MEMBER

 private:
  CudaDriver() = default;
  void* library_ = nullptr;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string deviceName_;
  int computeCapability_ = 0;
  int multiprocessors_ = 0;
  int64_t l2CacheBytes_ = 0;
  int driverVersion_ = 0;
};

}  // namespace mugraph::runtime
