#include "runtime/gpu_schedule.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "graph/error.h"
#include "graph/files.h"
#include "plan/target.h"

namespace mugraph::runtime {
namespace {

int archNumber(const std::string& arch) {  // "sm_90" -> 90
  return arch.rfind("sm_", 0) == 0 ? std::atoi(arch.c_str() + 3) : -1;
}

CUtensorMapDataType tensorMapType(graph::DType dtype) {
  switch (dtype) {
    case graph::DType::F16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case graph::DType::BF16:
      return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    default:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  }
}

CUtensorMapSwizzle tensorMapSwizzle(int bytes) {
  switch (bytes) {
    case 32:
      return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64:
      return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128:
      return CU_TENSOR_MAP_SWIZZLE_128B;
    default:
      return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

}  // namespace

GpuSchedule::GpuSchedule(const CudaDriver& driver, Manifest manifest, const std::string& dir)
    : driver_(driver), manifest_(std::move(manifest)) {
  int best = -1;
  for (const auto& [arch, file] : manifest_.ptx) {
    const int n = archNumber(arch);
    if (n <= driver_.computeCapability() && n > best) {
      best = n;
      ptxArch_ = arch;
    }
  }
  if (best < 0) {
    throw UserError(dir + "/manifest.json", "no PTX for this GPU (compute capability " +
                                                std::to_string(driver_.computeCapability()) + ")");
  }
  const std::string ptx = graph::readFileText(dir + "/" + manifest_.ptx.at(ptxArch_));
  driver_.check(driver_.moduleLoadData(&module_, ptx.c_str()),
                "loading " + manifest_.ptx.at(ptxArch_) + " of " + manifest_.schedule);
  for (const ManifestKernel& k : manifest_.kernels) {
    CUfunction f = nullptr;
    driver_.check(driver_.moduleGetFunction(&f, module_, k.entry.c_str()),
                  "finding entry " + k.entry);
    const plan::Target& target = plan::targetByName(ptxArch_, dir + "/manifest.json");
    if (k.dynamicSharedBytes > target.sharedBytesPerBlock) {
      throw UserError(dir + "/manifest.json",
                      "kernel " + k.entry + " needs " + std::to_string(k.dynamicSharedBytes) +
                          " B of shared memory; an " + target.name + " block has at most " +
                          std::to_string(target.sharedBytesPerBlock));
    }
    if (k.dynamicSharedBytes > target.defaultDynamicSharedBytes) {
      driver_.check(driver_.funcSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             static_cast<int>(k.dynamicSharedBytes)),
                    "raising the shared-memory limit of " + k.entry);
    }
    functions_.push_back(f);
  }
  for (const ManifestTensor& t : manifest_.tensors) {
    if (t.role == "workspace") continue;
    CUdeviceptr p = 0;
    driver_.check(driver_.memAlloc(&p, static_cast<size_t>(t.bytes + kGuardBytes)),
                  "allocating " + t.name);
    driver_.check(driver_.memsetD8(p + static_cast<CUdeviceptr>(t.bytes), 0xFF, kGuardBytes),
                  "poisoning the guard bytes of " + t.name);
    buffers_[t.name] = p;
  }
  if (manifest_.workspaceBytes > 0) {
    driver_.check(driver_.memAlloc(&workspace_, static_cast<size_t>(manifest_.workspaceBytes)),
                  "allocating the workspace");
  }
  driver_.check(driver_.streamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  // Tensor maps hold their tensor's address: encoded once, after the buffers exist.
  for (const ManifestKernel& k : manifest_.kernels) {
    std::vector<CUtensorMap> maps;
    for (const ManifestTensorMap& m : k.tensorMaps) {
      CUtensorMap map;
      std::array<cuuint32_t, 5> elementStrides{1, 1, 1, 1, 1};
      driver_.check(driver_.tensorMapEncodeTiled(
                        &map, tensorMapType(m.dtype), static_cast<cuuint32_t>(m.rank),
                        reinterpret_cast<void*>(pointerOf(m.tensor)), m.dims.data(),
                        m.strideBytes.data(), m.box.data(), elementStrides.data(),
                        CU_TENSOR_MAP_INTERLEAVE_NONE, tensorMapSwizzle(m.swizzleBytes),
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                    "encoding the tensor map of " + m.tensor + " for " + k.entry);
      maps.push_back(map);
    }
    tensorMaps_.push_back(std::move(maps));
  }
}

GpuSchedule::~GpuSchedule() {
  for (const auto& [name, p] : buffers_) driver_.memFree(p);
  if (workspace_) driver_.memFree(workspace_);
  if (stream_) driver_.streamDestroy(stream_);
  if (module_) driver_.moduleUnload(module_);
}

CUdeviceptr GpuSchedule::pointerOf(const std::string& tensor) const {
  const ManifestTensor& t = manifest_.tensor(tensor);
  if (t.role == "workspace") return workspace_ + static_cast<CUdeviceptr>(t.offset);
  return buffers_.at(tensor);
}

void GpuSchedule::upload(const std::string& tensor, const std::vector<uint8_t>& bytes) {
  const ManifestTensor& t = manifest_.tensor(tensor);
  if (static_cast<int64_t>(bytes.size()) != t.bytes) {
    throw std::runtime_error("upload of " + tensor + ": wrong byte count");
  }
  driver_.check(driver_.memcpyHtoD(pointerOf(tensor), bytes.data(), bytes.size()),
                "copying " + tensor + " to the GPU");
}

std::vector<uint8_t> GpuSchedule::download(const std::string& tensor) const {
  const ManifestTensor& t = manifest_.tensor(tensor);
  std::vector<uint8_t> bytes(static_cast<size_t>(t.bytes));
  driver_.check(driver_.memcpyDtoH(bytes.data(), pointerOf(tensor), bytes.size()),
                "copying " + tensor + " from the GPU");
  return bytes;
}

std::vector<std::string> GpuSchedule::writtenPastTheirEnd() const {
  std::vector<std::string> overrun;
  for (const ManifestTensor& t : manifest_.tensors) {
    if (t.role == "workspace") continue;
    std::vector<uint8_t> guard(kGuardBytes);
    driver_.check(
        driver_.memcpyDtoH(guard.data(), pointerOf(t.name) + static_cast<CUdeviceptr>(t.bytes),
                           guard.size()),
        "reading the guard bytes of " + t.name);
    for (uint8_t b : guard) {
      if (b != 0xFF) {
        overrun.push_back(t.name);
        break;
      }
    }
  }
  return overrun;
}

void GpuSchedule::poison(const std::string& tensor) {
  const ManifestTensor& t = manifest_.tensor(tensor);
  driver_.check(driver_.memsetD8(pointerOf(tensor), 0xFF, static_cast<size_t>(t.bytes)),
                "poisoning " + tensor);
}

void GpuSchedule::launchAll(CUstream stream) {
  for (size_t i = 0; i < manifest_.kernels.size(); ++i) {
    const ManifestKernel& k = manifest_.kernels[i];
    std::vector<CUdeviceptr> pointers;
    for (const std::string& name : k.params) pointers.push_back(pointerOf(name));
    std::vector<void*> args;
    for (CUdeviceptr& p : pointers) args.push_back(&p);
    for (CUtensorMap& map : tensorMaps_[i]) args.push_back(&map);
    driver_.check(
        driver_.launchKernel(functions_[i], k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1],
                             k.block[2], k.dynamicSharedBytes, stream, args.data(), nullptr),
        "launching " + k.entry);
  }
}

void GpuSchedule::run() {
  launchAll(stream_);
  driver_.check(driver_.streamSynchronize(stream_), "running " + manifest_.schedule);
}

TimingStats GpuSchedule::time(int warmup, int repetitions) {
  for (int i = 0; i < warmup; ++i) launchAll(stream_);
  driver_.check(driver_.streamSynchronize(stream_), "warm-up of " + manifest_.schedule);
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  driver_.check(driver_.streamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                "cuStreamBeginCapture");
  launchAll(stream_);
  driver_.check(driver_.streamEndCapture(stream_, &graph), "cuStreamEndCapture");
  driver_.check(driver_.graphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  std::vector<CUevent> events(static_cast<size_t>(repetitions) + 1);
  for (CUevent& e : events)
    driver_.check(driver_.eventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  for (int i = 0; i < 3; ++i) driver_.check(driver_.graphLaunch(exec, stream_), "cuGraphLaunch");
  driver_.check(driver_.eventRecord(events[0], stream_), "cuEventRecord");
  for (int i = 0; i < repetitions; ++i) {
    driver_.check(driver_.graphLaunch(exec, stream_), "cuGraphLaunch");
    driver_.check(driver_.eventRecord(events[i + 1], stream_), "cuEventRecord");
  }
  driver_.check(driver_.eventSynchronize(events.back()), "timing " + manifest_.schedule);
  std::vector<double> micros;
  for (int i = 0; i < repetitions; ++i) {
    float ms = 0;
    driver_.check(driver_.eventElapsedTime(&ms, events[i], events[i + 1]), "cuEventElapsedTime");
    micros.push_back(ms * 1000.0);
  }
  for (CUevent e : events) driver_.eventDestroy(e);
  driver_.graphExecDestroy(exec);
  driver_.graphDestroy(graph);
  std::sort(micros.begin(), micros.end());
  auto at = [&](double q) { return micros[static_cast<size_t>(q * (micros.size() - 1))]; };
  return TimingStats{repetitions, at(0.5), at(0.1), at(0.9), micros.front()};
}

}  // namespace mugraph::runtime
