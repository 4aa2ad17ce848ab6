// `--run` for the commands that emit code: runs a replayed schedule on the GPU through the
// runtime, checks it against the interpreter and times it. Without a GPU it throws a
// GpuUnavailable whose message says so plainly; the command exits 2.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "graph/dynamic_dims.h"
#include "graph/ir.h"

namespace mugraph::tools {

class GpuUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `dir` holds what `mugraph replay` wrote for `schedule`. Returns the report as JSON
// (runtime::gpuCheckReportJson, the report's one schema).
// `logitStd`: normal inputs whose attention logits have that deviation (runtime::GpuInputs).
// `dims`: the lengths to launch kernels that take them at (a dynamic schedule).
nlohmann::json runScheduleOnGpu(const graph::Schedule& schedule, const std::string& dir,
                                uint64_t seed, int repetitions = 100,
                                std::optional<double> logitStd = std::nullopt,
                                const graph::DimValues& dims = {});

std::string describeGpuRun(const nlohmann::json& report);  // a few readable lines

}  // namespace mugraph::tools
