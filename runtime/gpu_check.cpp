#include "runtime/gpu_check.h"

#include <cmath>
#include <sstream>

#include "graph/error.h"
#include "runtime/half_precision.h"
#include "verify/interpreter.h"
#include "verify/random_inputs.h"
#include "verify/relative_error.h"

namespace mugraph::runtime {
namespace {

// Logical row-major values of a tensor reordered into its storage order (an input's, or an
// output's to compare with what the kernels stored).
std::vector<double> toStorageOrder(const std::vector<double>& logical, const graph::Dims& shape,
                                   graph::Layout layout) {
  if (layout == graph::Layout::RowMajor) return logical;
  const std::vector<int64_t> strides = graph::storageStrides(shape, layout);
  std::vector<double> stored(logical.size());
  for (size_t flat = 0; flat < logical.size(); ++flat) {
    int64_t rest = static_cast<int64_t>(flat), offset = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      offset += (rest % shape[d]) * strides[d];
      rest /= shape[d];
    }
    stored[static_cast<size_t>(offset)] = logical[flat];
  }
  return stored;
}

}  // namespace

double gpuTolerance(graph::DType dtype) {
  switch (dtype) {
    case graph::DType::F16:
      return 2e-2;
    case graph::DType::BF16:
      return 5e-2;
    case graph::DType::F32:
      return 1e-3;
  }
  return 2e-2;
}

GpuCheckReport checkOnGpu(const CudaDriver& driver, const graph::Schedule& schedule,
                          const std::string& dir, uint64_t seed, int repetitions,
                          const GpuInputs& draw, const graph::DimValues& dims) {
  const graph::Program program =
      dims.empty() ? schedule.program : graph::instantiate(schedule.program, dims);
  return checkAgainstReference(driver, referenceRun(program, seed, draw), dir, repetitions, dims);
}

ProgramReference referenceRun(const graph::Program& program, uint64_t seed, const GpuInputs& draw) {
  ProgramReference reference;
  reference.seed = seed;
  std::ostringstream how;
  if (draw.logitStd) {
    const double stddev = verify::inputStdForLogitStd(program, *draw.logitStd);
    reference.inputValues = verify::normalInputs(program, seed, stddev);
    how << "normal, std " << stddev << " (logit std " << *draw.logitStd << ")";
  } else if (draw.normalStd) {
    reference.inputValues = verify::normalInputs(program, seed, *draw.normalStd);
    how << "normal, std " << *draw.normalStd;
  } else {
    reference.inputValues = verify::randomInputs(program, seed, draw.uniformScale);
    how << "uniform in [-" << draw.uniformScale << ", " << draw.uniformScale << "]";
  }
  reference.inputs = how.str();
  for (graph::TensorId t : program.inputs) {
    reference.dtypes[program.tensors[t].name] = program.tensors[t].dtype;
  }
  for (graph::TensorId t : program.outputs) {
    reference.dtypes[program.tensors[t].name] = program.tensors[t].dtype;
  }
  for (auto& [name, tensor] : reference.inputValues) {
    std::vector<double> rounded;
    encode(tensor.data, reference.dtypes.at(name), &rounded);
    tensor.data = rounded;  // the interpreter sees exactly what the GPU reads
  }
  reference.expected = verify::evaluate(program, reference.inputValues);
  return reference;
}

GpuCheckReport checkAgainstReference(const CudaDriver& driver, const ProgramReference& reference,
                                     const std::string& dir, int repetitions,
                                     const graph::DimValues& dims) {
  GpuSchedule gpu(driver, readManifest(dir + "/manifest.json", dims), dir);
  GpuCheckReport report;
  report.device = driver.deviceName();
  report.ptxArch = gpu.ptxArch();
  report.seed = reference.seed;
  report.inputs = reference.inputs;
  const auto matchesProgram = [&](const std::string& name, const ManifestTensor& t,
                                  const std::string& role, const graph::Dims& shape) {
    if (t.role != role || t.shape != shape || t.dtype != reference.dtypes.at(name)) {
      throw UserError(dir + "/manifest.json", "tensor '" + name + "' is not the program's " + role +
                                                  " of that shape and dtype");
    }
  };
  for (const auto& [name, tensor] : reference.inputValues) {
    const ManifestTensor& t = gpu.manifest().tensor(name);
    matchesProgram(name, t, "input", tensor.shape);
    gpu.upload(name, encode(toStorageOrder(tensor.data, t.shape, t.layout), t.dtype));
  }
  for (const ManifestTensor& t : gpu.manifest().tensors) {
    if (t.role != "input") gpu.poison(t.name);
  }
  gpu.run();

  report.matches = true;
  double worstRatio = 0;
  for (const auto& [name, want] : reference.expected) {
    const ManifestTensor& t = gpu.manifest().tensor(name);
    matchesProgram(name, t, "output", want.shape);
    const std::vector<double> got = decode(gpu.download(name), t.dtype);
    // Both in the order the output is stored (an output may be stored heads_transposed).
    const std::vector<double> stored = toStorageOrder(want.data, t.shape, t.layout);
    // NaN elements are counted as unwritten (and fail the check); the error is measured on
    // the elements the kernels did write.
    std::vector<double> written, wanted;
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(got[i])) {
        ++report.unwrittenElements;
        continue;
      }
      written.push_back(got[i]);
      wanted.push_back(stored[i]);
    }
    const double error = verify::normwiseRelativeError(wanted, written);
    report.outputErrors[name] = error;
    report.maxRelError = std::max(report.maxRelError, error);
    const double tolerance = gpuTolerance(t.dtype);
    if (error / tolerance >= worstRatio) {
      worstRatio = error / tolerance;
      report.tolerance = tolerance;
    }
    if (!(error <= tolerance)) report.matches = false;
  }
  if (report.unwrittenElements > 0) report.matches = false;
  report.writtenPastEnd = gpu.writtenPastTheirEnd();
  if (!report.writtenPastEnd.empty()) report.matches = false;
  if (repetitions > 0) report.timing = gpu.time(/*warmup=*/10, repetitions);
  return report;
}

TimingStats timeOnGpu(const CudaDriver& driver, const graph::Program& program,
                      const std::string& dir, uint64_t seed, int repetitions,
                      const GpuInputs& draw, const graph::DimValues& dims) {
  GpuSchedule gpu(driver, readManifest(dir + "/manifest.json", dims), dir);
  const verify::TensorMap<double> inputs =
      draw.normalStd ? verify::normalInputs(program, seed, *draw.normalStd)
                     : verify::randomInputs(program, seed, draw.uniformScale);
  for (const auto& [name, tensor] : inputs) {
    const ManifestTensor& t = gpu.manifest().tensor(name);
    if (t.role != "input" || t.shape != tensor.shape) {
      throw UserError(dir + "/manifest.json",
                      "tensor '" + name + "' is not the program's input of that shape");
    }
    gpu.upload(name, encode(toStorageOrder(tensor.data, t.shape, t.layout), t.dtype));
  }
  return gpu.time(/*warmup=*/10, repetitions);
}

}  // namespace mugraph::runtime
