#include "runtime/gpu_schedule.h"

#include <algorithm>
#include <stdexcept>

#include "graph/error.h"
#include "graph/files.h"
#include "plan/target.h"

namespace mugraph::runtime {

GpuSchedule::GpuSchedule(const CudaDriver& driver, Manifest read, const std::string& dir)
    : driver_(driver), launcher_(driver, std::move(read), dir) {
  for (const ManifestTensor& t : manifest().tensors) {
    if (t.role == "workspace") continue;
    CUdeviceptr p = 0;
    driver_.check(driver_.memAlloc(&p, static_cast<size_t>(t.bytes + kGuardBytes)),
                  "allocating " + t.name);
    driver_.check(driver_.memsetD8(p + static_cast<CUdeviceptr>(t.bytes), 0xFF, kGuardBytes),
                  "poisoning the guard bytes of " + t.name);
    buffers_[t.name] = p;
  }
  if (manifest().workspaceBytes > 0) {
    driver_.check(driver_.memAlloc(&workspace_, static_cast<size_t>(manifest().workspaceBytes)),
                  "allocating the workspace");
  }
  driver_.check(driver_.streamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

GpuSchedule::~GpuSchedule() {
  for (const auto& [name, p] : buffers_) driver_.memFree(p);
  if (workspace_) driver_.memFree(workspace_);
  if (stream_) driver_.streamDestroy(stream_);
}

CUdeviceptr GpuSchedule::pointerOf(const std::string& tensor) const {
  const ManifestTensor& t = manifest().tensor(tensor);
  if (t.role == "workspace") return workspace_ + static_cast<CUdeviceptr>(t.offset);
  return buffers_.at(tensor);
}

void GpuSchedule::upload(const std::string& tensor, const std::vector<uint8_t>& bytes) {
  const ManifestTensor& t = manifest().tensor(tensor);
  if (static_cast<int64_t>(bytes.size()) != t.bytes) {
    throw std::runtime_error("upload of " + tensor + ": wrong byte count");
  }
  driver_.check(driver_.memcpyHtoD(pointerOf(tensor), bytes.data(), bytes.size()),
                "copying " + tensor + " to the GPU");
}

std::vector<uint8_t> GpuSchedule::download(const std::string& tensor) const {
  const ManifestTensor& t = manifest().tensor(tensor);
  std::vector<uint8_t> bytes(static_cast<size_t>(t.bytes));
  driver_.check(driver_.memcpyDtoH(bytes.data(), pointerOf(tensor), bytes.size()),
                "copying " + tensor + " from the GPU");
  return bytes;
}

std::vector<std::string> GpuSchedule::writtenPastTheirEnd() const {
  std::vector<std::string> overrun;
  for (const ManifestTensor& t : manifest().tensors) {
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
  const ManifestTensor& t = manifest().tensor(tensor);
  driver_.check(driver_.memsetD8(pointerOf(tensor), 0xFF, static_cast<size_t>(t.bytes)),
                "poisoning " + tensor);
}

void GpuSchedule::launchAll(CUstream stream) {
  std::vector<CUdeviceptr> tensors;
  for (const ManifestTensor* t : launcher_.boundTensors()) tensors.push_back(buffers_.at(t->name));
  launcher_.launch(tensors, workspace_, stream);
}

void GpuSchedule::run() {
  launchAll(stream_);
  driver_.check(driver_.streamSynchronize(stream_), "running " + manifest().schedule);
}

TimingStats GpuSchedule::time(int warmup, int repetitions) {
  for (int i = 0; i < warmup; ++i) launchAll(stream_);
  driver_.check(driver_.streamSynchronize(stream_), "warm-up of " + manifest().schedule);
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  driver_.check(driver_.streamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                "cuStreamBeginCapture");
  launchAll(stream_);
  driver_.check(driver_.streamEndCapture(stream_, &graph), "cuStreamEndCapture");
  driver_.check(driver_.graphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  // The buffer each replay's L2 flush writes: twice the cache, so nothing of the last
  // replay survives in it.
  const size_t scrubBytes =
      static_cast<size_t>(std::max<int64_t>(2 * driver_.l2CacheBytes(), 1 << 20));
  CUdeviceptr scrub = 0;
  driver_.check(driver_.memAlloc(&scrub, scrubBytes), "allocating the L2 flush buffer");
  std::vector<CUevent> events(2 * static_cast<size_t>(repetitions));
  for (CUevent& e : events)
    driver_.check(driver_.eventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  for (int i = 0; i < 3; ++i) driver_.check(driver_.graphLaunch(exec, stream_), "cuGraphLaunch");
  for (int i = 0; i < repetitions; ++i) {
    driver_.check(driver_.memsetD8Async(scrub, static_cast<unsigned char>(i), scrubBytes, stream_),
                  "flushing the L2");
    driver_.check(driver_.eventRecord(events[2 * i], stream_), "cuEventRecord");
    driver_.check(driver_.graphLaunch(exec, stream_), "cuGraphLaunch");
    driver_.check(driver_.eventRecord(events[2 * i + 1], stream_), "cuEventRecord");
  }
  driver_.check(driver_.eventSynchronize(events.back()), "timing " + manifest().schedule);
  std::vector<double> micros;
  for (int i = 0; i < repetitions; ++i) {
    float ms = 0;
    driver_.check(driver_.eventElapsedTime(&ms, events[2 * i], events[2 * i + 1]),
                  "cuEventElapsedTime");
    micros.push_back(ms * 1000.0);
  }
  driver_.memFree(scrub);
  for (CUevent e : events) driver_.eventDestroy(e);
  driver_.graphExecDestroy(exec);
  driver_.graphDestroy(graph);
  std::sort(micros.begin(), micros.end());
  auto at = [&](double q) { return micros[static_cast<size_t>(q * (micros.size() - 1))]; };
  return TimingStats{repetitions, at(0.5), at(0.1), at(0.9), micros.front()};
}

}  // namespace mugraph::runtime
