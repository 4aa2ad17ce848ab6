// `mugraph dataset check DIR`: re-hashes every file, re-parses every schedule and manifest
// row, checks external members' rows (external_row_check.h), and reports everything missing
// or inconsistent. With a GPU it also launches every member from its manifest and PTX alone
// and confirms it matches the class's program (dataset_gpu_check.h).
#pragma once

#include <string>
#include <vector>

namespace mugraph::dataset {

struct DatasetCheckOptions {
  bool runOnGpu = false;
  bool record = false;  // with runOnGpu: write the timings and external evidence into the rows
};

struct DatasetCheckReport {
  int rows = 0;
  int variantsChecked = 0;
  int externalMembers = 0;
  int excluded = 0;  // external members kept out of their class (failed on a GPU)
  int gpuRuns = 0;
  std::vector<std::string> problems;  // one line each: where, then what
  std::vector<std::string> gpuLines;  // per variant, with --run
};

DatasetCheckReport checkDataset(const std::string& dir, const DatasetCheckOptions& options);

}  // namespace mugraph::dataset
