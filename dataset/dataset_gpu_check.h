// `mugraph dataset check DIR --run`: every member of every class (our variants and external
// ones) launched from its manifest and PTX alone on the GPU, on the same fresh random inputs
// at several spreads, compared with the class's program run by the interpreter in double,
// and timed the same way (CUDA-graph replays). With `record`, each row keeps its timing
// ("gpu") and an external member its evidence: gpu-random-test, passed with the trials,
// tolerance and worst error, or failed with the reason (then classes.json lists it as
// excluded, and later runs leave it out).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "runtime/cuda_driver.h"

namespace mugraph::dataset {

struct GpuMember {
  std::string key;  // "<class>/<variant>"
  graph::Program program;
  bool external = false;
};

struct DatasetGpuResult {
  int runs = 0;
  std::vector<std::string> lines;     // per member
  std::vector<std::string> problems;  // per member that does not match or does not run
};

inline constexpr int kTimingRepetitions = 100;

// `rows` is updated in place when `record` is set (the caller writes the index).
DatasetGpuResult runDatasetOnGpu(const runtime::CudaDriver& driver, const std::string& dir,
                                 const std::vector<GpuMember>& members, bool record,
                                 std::map<std::string, nlohmann::json>& rows);

}  // namespace mugraph::dataset
