// What `mugraph superoptimize` does for one program, shared by the program path
// (superoptimize_command.cpp) and the ONNX model path (superoptimize_model.cpp), which runs it
// once per subgraph: the search options from the flags, GPU profiling, the variants' files
// and the summary JSON.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan/target.h"
#include "runtime/cuda_driver.h"
#include "search/superoptimize.h"

namespace mugraph::tools {

struct SuperoptimizeOptions {
  std::string program;
  int threads = 0;
  double timeLimit = 0;
  std::string arch = plan::kDefaultTarget;
  std::string out;
  std::string checkpoint;
  bool resume = false;
  bool profile = false;
  bool json = false;
  std::optional<int> maxVariants, maxKernels, maxBlockGraphs, maxBlockOps;
  std::optional<int64_t> maxBlocks;
  std::vector<int64_t> forloops;
  std::vector<int> blockThreads;
  bool noGridSplit = false;
  std::vector<std::string> dims;  // --dim name=value, for ONNX models
};

// Measured GPU time of each variant (by name) when --profile ranked them.
using Measurements = std::map<std::string, double>;

search::SearchOptions searchOptionsFor(const graph::Program& program,
                                       const SuperoptimizeOptions& o);
std::unique_ptr<runtime::CudaDriver> driverForProfile(bool profile);  // UserError without a GPU
Measurements profileOnGpu(const runtime::CudaDriver& driver, search::SearchResult& result,
                          const plan::Target& target, const std::string& out);
nlohmann::json summaryJson(const search::SearchResult& result, const Measurements& measured);
int writeVariants(const search::SearchResult& result, const Measurements& measured,
                  const plan::Target& target, const std::string& out);

// `superoptimize model.onnx`: every subgraph searched and written under o.out/<subgraph>/.
int superoptimizeModel(const SuperoptimizeOptions& o);

}  // namespace mugraph::tools
