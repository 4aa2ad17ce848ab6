#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <initializer_list>
#include <stdexcept>

namespace mugraph::runtime {
namespace {

void* findSymbol(void* library, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* symbol = dlsym(library, name)) return symbol;
  }
  return nullptr;
}

}  // namespace

std::unique_ptr<CudaDriver> CudaDriver::open(std::string& whyNot, int ordinal) {
  return open(whyNot, [ordinal](int) { return ordinal; });
}

std::unique_ptr<CudaDriver> CudaDriver::open(std::string& whyNot,
                                             const std::function<int(int deviceCount)>& choose) {
  std::unique_ptr<CudaDriver> driver(new CudaDriver());
  driver->library_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver->library_) {
    whyNot = "no CUDA driver on this machine (libcuda.so.1 could not be loaded)";
    return nullptr;
  }
#define MUGRAPH_LOAD_MEMBER(member, function, ...)                                          \
  driver->member =                                                                          \
      reinterpret_cast<decltype(&::function)>(findSymbol(driver->library_, {__VA_ARGS__})); \
  if (!driver->member) {                                                                    \
    whyNot = "the CUDA driver lacks " #function " (driver too old?)";                       \
    return nullptr;                                                                         \
  }
  MUGRAPH_CUDA_DRIVER_FUNCTIONS(MUGRAPH_LOAD_MEMBER)
#undef MUGRAPH_LOAD_MEMBER
  if (driver->init(0) != CUDA_SUCCESS) {
    whyNot = "the CUDA driver did not initialize (no usable GPU?)";
    return nullptr;
  }
  int count = 0;
  if (driver->deviceGetCount(&count) != CUDA_SUCCESS || count <= 0) {
    whyNot = "no CUDA device on this machine";
    return nullptr;
  }
  const int ordinal = choose(count);
  if (ordinal < 0 || ordinal >= count) {
    whyNot = "no CUDA device " + std::to_string(ordinal) + " (this machine has " +
             std::to_string(count) + ")";
    return nullptr;
  }
  try {
    driver->check(driver->deviceGet(&driver->device_, ordinal), "cuDeviceGet");
    char name[256] = {};
    driver->check(driver->deviceGetName(name, sizeof name, driver->device_), "cuDeviceGetName");
    driver->deviceName_ = name;
    int major = 0, minor = 0;
    driver->check(driver->deviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                             driver->device_),
                  "compute capability");
    driver->check(driver->deviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                             driver->device_),
                  "compute capability");
    driver->computeCapability_ = major * 10 + minor;
    driver->check(
        driver->deviceGetAttribute(&driver->multiprocessors_,
                                   CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, driver->device_),
        "multiprocessor count");
    int l2Bytes = 0;
    driver->check(
        driver->deviceGetAttribute(&l2Bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, driver->device_),
        "L2 cache size");
    driver->l2CacheBytes_ = l2Bytes;
    driver->check(driver->driverGetVersion(&driver->driverVersion_), "cuDriverGetVersion");
    driver->check(driver->primaryCtxRetain(&driver->context_, driver->device_),
                  "cuDevicePrimaryCtxRetain");
    driver->check(driver->ctxSetCurrent(driver->context_), "cuCtxSetCurrent");
  } catch (const std::exception& e) {
    whyNot = e.what();
    return nullptr;
  }
  return driver;
}

CudaDriver::~CudaDriver() {
  // The primary context stays retained until the process ends; the library stays loaded
  // because other objects may still hold driver handles during static destruction.
}

void CudaDriver::check(CUresult result, const std::string& what) const {
  if (result == CUDA_SUCCESS) return;
  const char* message = nullptr;
  if (getErrorString) getErrorString(result, &message);
  throw std::runtime_error("CUDA driver: " + what +
                           " failed: " + (message ? message : "error " + std::to_string(result)));
}

}  // namespace mugraph::runtime
