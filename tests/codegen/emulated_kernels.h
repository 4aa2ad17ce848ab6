// Runs the kernel.cu of a lowered schedule on the CPU: builds it with the host compiler
// against tests/codegen/emulation (fibers for CUDA threads, emulated PTX primitives), lays
// out inputs, outputs and the workspace exactly as the manifest's ABI says (storage order
// for transposed inputs, workspace offsets, parameter order), launches every kernel in order
// and returns the outputs as doubles. Unwritten output elements come back as NaN.
// expectMatchesInterpreter compares such a run with verify::evaluate.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "codegen/device_header.h"
#include "codegen/emit/kernel.h"
#include "codegen_test_support.h"
#include "graph/error.h"
#include "graph/hash.h"
#include "runtime/half_precision.h"
#include "verify/host_tensor.h"
#include "verify/interpreter.h"
#include "verify/random_inputs.h"

namespace mugraph::codegen::testing {

inline double loadElement(const unsigned char* base, graph::DType dtype, int64_t index) {
  switch (dtype) {
    case graph::DType::F32: {
      float f;
      std::memcpy(&f, base + index * 4, 4);
      return f;
    }
    case graph::DType::F16: {
      uint16_t bits;
      std::memcpy(&bits, base + index * 2, 2);
      return runtime::halfBitsToFloat(bits);
    }
    case graph::DType::BF16: {
      uint16_t bits;
      std::memcpy(&bits, base + index * 2, 2);
      return runtime::bfloat16BitsToFloat(bits);
    }
  }
  return 0.0;
}

// Stores `value` rounded to `dtype` and returns the rounded value.
inline double storeElement(unsigned char* base, graph::DType dtype, int64_t index, double value) {
  const float f = static_cast<float>(value);
  switch (dtype) {
    case graph::DType::F32:
      std::memcpy(base + index * 4, &f, 4);
      break;
    case graph::DType::F16: {
      const uint16_t bits = runtime::floatToHalfBits(f);
      std::memcpy(base + index * 2, &bits, 2);
      break;
    }
    case graph::DType::BF16: {
      const uint16_t bits = runtime::floatToBfloat16Bits(f);
      std::memcpy(base + index * 2, &bits, 2);
      break;
    }
  }
  return loadElement(base, dtype, index);
}

// Storage offset of each logical element (row-major logical order).
inline std::vector<int64_t> storageOffsets(const graph::TensorDesc& desc) {
  const std::vector<int64_t> strides = graph::storageStrides(desc.shape, desc.layout);
  const int64_t count = graph::elementCount(desc.shape);
  std::vector<int64_t> offsets(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i;
    int64_t offset = 0;
    for (int d = static_cast<int>(desc.shape.size()) - 1; d >= 0; --d) {
      offset += (rest % desc.shape[d]) * strides[d];
      rest /= desc.shape[d];
    }
    offsets[static_cast<size_t>(i)] = offset;
  }
  return offsets;
}

struct AlignedBuffer {
  struct Free {
    void operator()(unsigned char* p) const { ::operator delete[](p, std::align_val_t(256)); }
  };
  std::unique_ptr<unsigned char[], Free> data;
  explicit AlignedBuffer(int64_t bytes)
      : data(static_cast<unsigned char*>(::operator new[](
            static_cast<size_t>(std::max<int64_t>(bytes, 1)), std::align_val_t(256)))) {
    std::memset(data.get(), 0xff, static_cast<size_t>(std::max<int64_t>(bytes, 1)));  // NaN
  }
};

struct EmulatedRun {
  verify::TensorMap<double> inputs;  // as rounded to their dtypes
  verify::TensorMap<double> outputs;
};

class EmulatedKernels {
 public:
  // Builds `source` into a shared library in `folder`; throws UserError with the log.
  EmulatedKernels(const std::string& source, const std::filesystem::path& folder) {
    std::ofstream(folder / "kernel.cu") << source;
    for (const DeviceHeader& header : deviceHeaders()) {
      std::ofstream(folder / header.name) << header.source;
    }
    const std::string library = (folder / "kernel.so").string();
    const std::string command = std::string(MUGRAPH_HOST_CXX) +
                                " -std=c++17 -O2 -fPIC -shared -DMUGRAPH_HOST_EMULATION -I" +
                                folder.string() + " -I" + MUGRAPH_SOURCE_DIR + " -I" +
                                MUGRAPH_SOURCE_DIR +
                                "/tests/codegen/emulation -include cuda_emulation.h -x c++ " +
                                (folder / "kernel.cu").string() + " -o " + library + " 2>" +
                                (folder / "build.log").string();
    if (std::system(command.c_str()) != 0) {
      std::ifstream log(folder / "build.log");
      throw UserError("emulated build", std::string(std::istreambuf_iterator<char>(log), {}));
    }
    handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw UserError("dlopen", dlerror());
    launch_ = reinterpret_cast<LaunchFunction>(dlsym(handle_, "mg_emu_launch"));
    using SharedFunction = unsigned char* (*)(unsigned long*, unsigned char*);
    const auto shared = reinterpret_cast<SharedFunction>(dlsym(handle_, "mg_emu_shared_memory"));
    unsigned long bytes = 0;
    shared_ = shared(&bytes, &sharedPoison_);
    sharedCapacity_ = static_cast<int64_t>(bytes);
  }
  ~EmulatedKernels() {
    if (handle_) dlclose(handle_);
  }
  EmulatedKernels(const EmulatedKernels&) = delete;
  EmulatedKernels& operator=(const EmulatedKernels&) = delete;

  // Runs every kernel of `emitted` (for `graph`) on `inputs` (logical order, by name). Kernels
  // that take the lengths of dynamic dims `dims` (declaration order) run at `lengths`: `graph`
  // is then the schedule instantiated there (its tensors' sizes), `emitted` the dynamic one's.
  EmulatedRun run(const graph::KernelGraph& graph, const EmittedSource& emitted,
                  const verify::TensorMap<double>& inputs,
                  const std::vector<graph::DynamicDim>& dims = {},
                  const graph::DimValues& lengths = {}) {
    const ScheduleAbi& abi = emitted.abi;
    std::vector<std::unique_ptr<AlignedBuffer>> buffers;
    std::vector<std::pair<const unsigned char*, std::string>> guarded;
    AlignedBuffer workspace(abi.workspaceBytes);
    std::vector<unsigned char*> pointer(graph.tensors.size(), nullptr);
    EmulatedRun run;
    for (const TensorBinding& binding : abi.tensors) {
      const graph::TensorDesc& desc = graph.tensors[binding.tensor];
      if (binding.role == TensorRole::Workspace) {
        pointer[binding.tensor] = workspace.data.get() + binding.offset;
        continue;
      }
      // Guard bytes past every tensor stay poisoned unless a kernel writes past its end.
      const int64_t bytes = graph::elementCount(desc.shape) * graph::dtypeBytes(desc.dtype);
      buffers.push_back(std::make_unique<AlignedBuffer>(bytes + kGuardBytes));
      guarded.push_back({buffers.back()->data.get() + bytes, desc.name});
      pointer[binding.tensor] = buffers.back()->data.get();
      if (binding.role != TensorRole::Input) continue;
      const verify::HostTensor<double>& given = inputs.at(desc.name);
      verify::HostTensor<double> rounded{desc.shape, given.data};
      const std::vector<int64_t> offsets = storageOffsets(desc);
      for (size_t i = 0; i < offsets.size(); ++i) {
        rounded.data[i] =
            storeElement(pointer[binding.tensor], desc.dtype, offsets[i], given.data[i]);
      }
      run.inputs[desc.name] = rounded;
    }
    for (size_t k = 0; k < abi.kernels.size(); ++k) {
      const KernelAbi& kernel = abi.kernels[k];
      Closure closure;
      closure.function = dlsym(handle_, kernel.entry.c_str());
      if (!closure.function) throw UserError(kernel.entry, "is not in the emulated library");
      for (const KernelParam& param : kernel.params) closure.args.push_back(pointer[param.tensor]);
      const EmittedKernel& launch = emitted.kernels[k];
      // An int argument travels in the low half of its integer register (x86-64 System V); only
      // a kernel that takes the lengths has them (the manifest's rule).
      const std::vector<graph::DynamicDim> taken =
          launch.launchCounts ? dims : std::vector<graph::DynamicDim>{};
      for (const graph::DynamicDim& dim : taken) {
        closure.args.push_back(
            reinterpret_cast<void*>(static_cast<intptr_t>(lengths.at(dim.name))));
      }
      std::array<int64_t, graph::kGridAxes> grid = launch.grid;
      if (launch.launchCounts) {
        for (int axis = 0; axis < graph::kGridAxes; ++axis) {
          const graph::LaunchCount& count = launch.launchCounts->grid[axis];
          grid[axis] =
              count.isStatic() ? count.constant : count.at(lengths.at(dims.at(count.dim).name));
        }
      }
      char error[256] = {0};
      if (launch_(&invoke, &closure, static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]),
                  static_cast<unsigned>(grid[2]), static_cast<unsigned>(launch.threads), error,
                  sizeof error) != 0) {
        throw UserError(kernel.entry, error);
      }
      // The manifest's dynamic shared memory (the plan's bytes) must cover every byte used.
      for (int64_t b = launch.dynamicSharedBytes; b < sharedCapacity_; ++b) {
        if (shared_[b] == sharedPoison_) continue;
        throw UserError(kernel.entry, "touched shared-memory byte " + std::to_string(b) +
                                          ", past its planned " +
                                          std::to_string(launch.dynamicSharedBytes) + " bytes");
      }
    }
    for (const auto& [guard, name] : guarded) {
      for (int64_t b = 0; b < kGuardBytes; ++b) {
        if (guard[b] != 0xff) throw UserError(name, "was written past its end");
      }
    }
    for (graph::TensorId t : graph.outputs) {
      const graph::TensorDesc& desc = graph.tensors[t];
      verify::HostTensor<double> out{desc.shape, {}};
      for (int64_t offset : storageOffsets(desc)) {
        out.data.push_back(loadElement(pointer[t], desc.dtype, offset));
      }
      run.outputs[desc.name] = out;
    }
    return run;
  }

 private:
  using LaunchFunction = int (*)(void (*)(void*), void*, unsigned, unsigned, unsigned, unsigned,
                                 char*, int);
  struct Closure {
    void* function = nullptr;
    std::vector<void*> args;
  };

  // Kernel parameters are all pointers, so a call through a pointer-only signature of the
  // same arity passes them exactly as the kernel expects (x86-64 System V).
  static void invoke(void* raw) {
    const Closure& c = *static_cast<const Closure*>(raw);
    const std::vector<void*>& a = c.args;
    using P = void*;
    switch (a.size()) {
      case 1:
        return reinterpret_cast<void (*)(P)>(c.function)(a[0]);
      case 2:
        return reinterpret_cast<void (*)(P, P)>(c.function)(a[0], a[1]);
      case 3:
        return reinterpret_cast<void (*)(P, P, P)>(c.function)(a[0], a[1], a[2]);
      case 4:
        return reinterpret_cast<void (*)(P, P, P, P)>(c.function)(a[0], a[1], a[2], a[3]);
      case 5:
        return reinterpret_cast<void (*)(P, P, P, P, P)>(c.function)(a[0], a[1], a[2], a[3], a[4]);
      case 6:
        return reinterpret_cast<void (*)(P, P, P, P, P, P)>(c.function)(a[0], a[1], a[2], a[3],
                                                                        a[4], a[5]);
      case 7:
        return reinterpret_cast<void (*)(P, P, P, P, P, P, P)>(c.function)(a[0], a[1], a[2], a[3],
                                                                           a[4], a[5], a[6]);
      default:
        std::abort();  // the tests' kernels have at most seven parameters
    }
  }

  static constexpr int64_t kGuardBytes = 256;
  void* handle_ = nullptr;
  LaunchFunction launch_ = nullptr;
  unsigned char* shared_ = nullptr;  // poisoned by every launch
  unsigned char sharedPoison_ = 0;
  int64_t sharedCapacity_ = 0;
};

#if defined(__x86_64__)
inline constexpr bool kCanEmulate = true;
#else
inline constexpr bool kCanEmulate = false;
#endif

inline bool usesSixteenBitTypes(const graph::KernelGraph& graph) {
  for (const graph::TensorDesc& t : graph.tensors) {
    if (t.dtype != graph::DType::F32) return true;
  }
  return false;
}

// Runs `schedule` (block graphs only) emulated on `inputs` (logical order, by name) and
// compares every output with the interpreter on the same (dtype-rounded) inputs, normwise:
// 2e-2 where 16-bit types are involved, 1e-5 for f32 only. An output that overflows where
// the interpreter's is finite fails.
inline void expectMatchesInterpreter(const graph::Schedule& schedule,
                                     const verify::TensorMap<double>& inputs) {
  SCOPED_TRACE("schedule " + schedule.name);
  const EmittedSource emitted = emitForEmulation(schedule);
  const auto folder = scratchFolder("emulated_" + graph::hashHex(graph::scheduleHash(schedule)));
  EmulatedKernels kernels(emitted.source, folder);
  const EmulatedRun run = kernels.run(schedule.graph, emitted, inputs);
  const verify::TensorMap<double> expected = verify::evaluate<double>(schedule.graph, run.inputs);
  const double tolerance = usesSixteenBitTypes(schedule.graph) ? 2e-2 : 1e-5;
  for (const auto& [name, reference] : expected) {
    SCOPED_TRACE("output " + name);
    const std::vector<double>& got = run.outputs.at(name).data;
    ASSERT_EQ(got.size(), reference.data.size());
    double difference = 0;
    double magnitude = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      // Random programs may divide by zero or take sqrt of a negative: the same there.
      if (!std::isfinite(reference.data[i])) continue;
      ASSERT_FALSE(std::isnan(got[i])) << "element " << i << " is unwritten or NaN";
      difference = std::max(difference, std::abs(got[i] - reference.data[i]));
      magnitude = std::max(magnitude, std::abs(reference.data[i]));
    }
    // An f16 output this small is subnormal: its spacing (2^-24) bounds the error instead.
    const graph::TensorDesc& desc = schedule.graph.tensors[*schedule.graph.findTensor(name)];
    const double floor = desc.dtype == graph::DType::F16 ? 0x1p-24 : 0.0;
    EXPECT_LE(difference, tolerance * magnitude + floor)
        << "normwise relative error " << difference / std::max(magnitude, 1e-30);
  }
  std::filesystem::remove_all(folder);
}

// The same on random inputs of `seed` and `scale` (verify::randomInputs).
inline void expectMatchesInterpreter(const graph::Schedule& schedule, uint64_t seed, double scale) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  expectMatchesInterpreter(schedule, verify::randomInputs(schedule.program, seed, scale));
}

}  // namespace mugraph::codegen::testing
