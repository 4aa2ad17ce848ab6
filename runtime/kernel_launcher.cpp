#include "runtime/kernel_launcher.h"

#include <array>
#include <stdexcept>

#include "graph/error.h"
#include "graph/files.h"
#include "plan/target.h"

namespace mugraph::runtime {
namespace {

// The first architecture whose PTX has griddepcontrol (programmatic dependent launch).
inline constexpr int kProgrammaticLaunchArch = 90;

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

KernelLauncher::KernelLauncher(const CudaDriver& driver, Manifest manifest, const std::string& dir)
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
  programmaticLaunch_ = manifest_.waitsForPriorGrids && best >= kProgrammaticLaunchArch;
  const plan::Target& target = plan::targetByName(ptxArch_, dir + "/manifest.json");
  const std::string ptx = graph::readFileText(dir + "/" + manifest_.ptx.at(ptxArch_));
  driver_.check(driver_.moduleLoadData(&module_, ptx.c_str()),
                "loading " + manifest_.ptx.at(ptxArch_) + " of " + manifest_.schedule);
  for (const ManifestKernel& k : manifest_.kernels) {
    CUfunction f = nullptr;
    driver_.check(driver_.moduleGetFunction(&f, module_, k.entry.c_str()),
                  "finding entry " + k.entry);
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
}

namespace {

graph::DimValues maxLengths(const std::vector<graph::DynamicDim>& dims) {
  graph::DimValues lengths;
  for (const graph::DynamicDim& d : dims) lengths[d.name] = d.max;
  return lengths;
}

}  // namespace

KernelLauncher::KernelLauncher(const CudaDriver& driver, const std::string& dir)
    : KernelLauncher(driver, readManifestDocument(dir + "/manifest.json"), dir) {}

KernelLauncher::KernelLauncher(const CudaDriver& driver, nlohmann::json document,
                               const std::string& dir)
    : KernelLauncher(driver,
                     manifestAt(document, dir + "/manifest.json",
                                maxLengths(manifestDims(document, dir + "/manifest.json"))),
                     dir) {
  manifestPath_ = dir + "/manifest.json";
  dims_ = manifestDims(document, manifestPath_);
  if (!dims_.empty()) document_ = std::move(document);
}

void KernelLauncher::setLengths(const graph::DimValues& lengths) {
  if (lengths == manifest_.dims) return;
  if (dims_.empty()) {
    throw UserError(manifestPath_.empty() ? manifest_.schedule : manifestPath_,
                    "its kernels take no lengths (" + graph::dimValuesText(lengths) + " given)");
  }
  Manifest next = manifestAt(document_, manifestPath_, lengths);
  if (next.kernels.size() != manifest_.kernels.size()) {
    throw UserError(manifestPath_, "has another kernel list at " + graph::dimValuesText(lengths));
  }
  manifest_ = std::move(next);
  tensorMaps_.clear();  // re-encoded at the next launch: their dims follow the lengths
}

KernelLauncher::~KernelLauncher() {
  if (module_) driver_.moduleUnload(module_);
}

std::vector<const ManifestTensor*> KernelLauncher::boundTensors() const {
  std::vector<const ManifestTensor*> bound;
  for (const ManifestTensor& t : manifest_.tensors) {
    if (t.role != "workspace") bound.push_back(&t);
  }
  return bound;
}

CUdeviceptr KernelLauncher::addressOf(const std::string& tensor) const {
  const ManifestTensor& t = manifest_.tensor(tensor);
  if (t.role == "workspace") return workspace_ + static_cast<CUdeviceptr>(t.offset);
  size_t i = 0;
  for (const ManifestTensor& other : manifest_.tensors) {
    if (&other == &t) return tensors_.at(i);
    if (other.role != "workspace") ++i;
  }
  throw std::logic_error("tensor " + tensor + " is not in the manifest");
}

void KernelLauncher::encodeTensorMaps() {
  tensorMaps_.clear();
  for (const ManifestKernel& k : manifest_.kernels) {
    std::vector<CUtensorMap> maps;
    for (const ManifestTensorMap& m : k.tensorMaps) {
      CUtensorMap map;
      std::array<cuuint32_t, 5> elementStrides{1, 1, 1, 1, 1};
      driver_.check(driver_.tensorMapEncodeTiled(
                        &map, tensorMapType(m.dtype), static_cast<cuuint32_t>(m.rank),
                        reinterpret_cast<void*>(addressOf(m.tensor)), m.dims.data(),
                        m.strideBytes.data(), m.box.data(), elementStrides.data(),
                        CU_TENSOR_MAP_INTERLEAVE_NONE, tensorMapSwizzle(m.swizzleBytes),
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                    "encoding the tensor map of " + m.tensor + " for " + k.entry);
      maps.push_back(map);
    }
    tensorMaps_.push_back(std::move(maps));
  }
}

void KernelLauncher::launch(const std::vector<CUdeviceptr>& tensors, CUdeviceptr workspace,
                            CUstream stream) {
  if (tensors.size() != boundTensors().size()) {
    throw std::invalid_argument(manifest_.schedule + " takes " +
                                std::to_string(boundTensors().size()) + " tensors, not " +
                                std::to_string(tensors.size()));
  }
  if (tensorMaps_.empty() || tensors != tensors_ || workspace != workspace_) {
    tensors_ = tensors;
    workspace_ = workspace;
    encodeTensorMaps();
  }
  for (size_t i = 0; i < manifest_.kernels.size(); ++i) {
    const ManifestKernel& k = manifest_.kernels[i];
    std::vector<CUdeviceptr> pointers;
    for (const std::string& name : k.params) pointers.push_back(addressOf(name));
    std::vector<void*> args;
    for (CUdeviceptr& p : pointers) args.push_back(&p);
    for (CUtensorMap& map : tensorMaps_[i]) args.push_back(&map);
    std::vector<int32_t> lengths = k.dimArguments;
    for (int32_t& length : lengths) args.push_back(&length);
    CUlaunchConfig config{};
    config.gridDimX = k.grid[0];
    config.gridDimY = k.grid[1];
    config.gridDimZ = k.grid[2];
    config.blockDimX = k.block[0];
    config.blockDimY = k.block[1];
    config.blockDimZ = k.block[2];
    config.sharedMemBytes = k.dynamicSharedBytes;
    config.hStream = stream;
    // Kernels that wait for the grids before them themselves start while those drain.
    CUlaunchAttribute overlap{};
    overlap.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    overlap.value.programmaticStreamSerializationAllowed = 1;
    if (programmaticLaunch_) {
      config.attrs = &overlap;
      config.numAttrs = 1;
    }
    driver_.check(driver_.launchKernelEx(&config, functions_[i], args.data(), nullptr),
                  "launching " + k.entry);
  }
}

}  // namespace mugraph::runtime
