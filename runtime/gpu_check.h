// Runs a replayed schedule on the GPU and checks it against the reference interpreter: fresh
// random inputs rounded to their dtypes, outputs poisoned first (so an unwritten element
// shows as NaN), the interpreter in double on the same rounded inputs, then timing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "graph/dynamic_dims.h"
#include "graph/ir.h"
#include "runtime/cuda_driver.h"
#include "runtime/gpu_schedule.h"
#include "verify/host_tensor.h"

namespace mugraph::runtime {

// Accepted relative error (verify::normwiseRelativeError) of an output stored as `dtype`,
// against double: f16 keeps 11 significant bits and bf16 8, and the kernels round
// intermediates (e.g. softmax weights fed to an f16 matrix product) to the input dtype; f32
// outputs accumulate in f32.
double gpuTolerance(graph::DType dtype);

struct GpuCheckReport {
  std::string device;
  std::string ptxArch;
  uint64_t seed = 0;
  std::string inputs;  // how they were drawn: "uniform ±0.5", "normal σ=1.41 (logit std 16)"
  bool matches = false;
  double maxRelError = 0;                   // max over outputs
  double tolerance = 0;                     // of the output with the largest error ratio
  int64_t unwrittenElements = 0;            // NaN after the run (poison left, or NaN computed)
  std::vector<std::string> writtenPastEnd;  // tensors whose guard bytes a kernel wrote
  std::map<std::string, double> outputErrors;
  TimingStats timing;
};

// How the inputs of a GPU check are drawn. By default uniform in [-0.5, 0.5], small enough
// for softmax programs without max-subtraction (Mirage's GQA), whose exp values overflow f16
// at real spreads. `logitStd` draws normal inputs whose attention logits have that standard
// deviation (verify::inputStdForLogitStd): the spread of real models, up to 16.
struct GpuInputs {
  double uniformScale = 0.5;
  std::optional<double> logitStd;
  std::optional<double> normalStd;  // normal inputs of this standard deviation
};

// `dir` is what `mugraph replay` wrote (manifest.json and PTX). `repetitions` = 0 skips timing.
// A dynamic schedule whose kernels take the lengths runs at `dims` (one length per dim), and
// the interpreter evaluates its program there (graph::instantiate).
GpuCheckReport checkOnGpu(const CudaDriver& driver, const graph::Schedule& schedule,
                          const std::string& dir, uint64_t seed, int repetitions,
                          const GpuInputs& draw = {}, const graph::DimValues& dims = {});

// A program's inputs drawn once, rounded to their dtypes, and its outputs by the interpreter
// in double: shared by every implementation checked on the same draw, so a class of a large
// GEMM evaluates its reference once per draw instead of once per member.
struct ProgramReference {
  uint64_t seed = 0;
  std::string inputs;                          // how they were drawn (GpuCheckReport::inputs)
  std::map<std::string, graph::DType> dtypes;  // of every input and output
  verify::TensorMap<double> inputValues;       // as the GPU reads them
  verify::TensorMap<double> expected;
};
ProgramReference referenceRun(const graph::Program& program, uint64_t seed,
                              const GpuInputs& draw = {});

// Kernels that come with a manifest (what `mugraph replay` writes, or a dataset's external
// member from another compiler) checked against a reference of the program they claim to
// compute. UserError when the manifest's inputs or outputs are not the program's.
// `dims`: the lengths to launch kernels that take them at (readManifest).
GpuCheckReport checkAgainstReference(const CudaDriver& driver, const ProgramReference& reference,
                                     const std::string& dir, int repetitions,
                                     const graph::DimValues& dims = {});

// The kernels in `dir` timed at `dims` (`program` instantiated there) on inputs drawn as
// `draw` says, without evaluating the program: for lengths whose reference in double would take
// longer than the run. The output is not checked; checkOnGpu at other lengths does that.
TimingStats timeOnGpu(const CudaDriver& driver, const graph::Program& program,
                      const std::string& dir, uint64_t seed, int repetitions,
                      const GpuInputs& draw = {}, const graph::DimValues& dims = {});

}  // namespace mugraph::runtime
