// `mugraph dataset check DIR`: re-hashes every file, re-parses every schedule and manifest
// row, and reports everything missing or inconsistent. With a GPU it also launches every
// variant from its manifest and PTX alone and confirms it matches the class's program.
#pragma once

#include <string>
#include <vector>

namespace mugraph::dataset {

struct DatasetCheckReport {
  int rows = 0;
  int variantsChecked = 0;
  int gpuRuns = 0;
  std::vector<std::string> problems;  // one line each: where, then what
  std::vector<std::string> gpuLines;  // per variant, with --run
};

DatasetCheckReport checkDataset(const std::string& dir, bool runOnGpu);

}  // namespace mugraph::dataset
