// Builds an equivalent-PTX dataset: for each class (a program and schedules that implement
// it), verifies every member, generates its CUDA C++, PTX and manifest, and records a
// manifest row with file digests, launch information, resources and verification evidence.
// Each variant is written atomically (a temp folder, then rename) and the manifest is
// rewritten atomically after each one, so an interrupted run leaves a consistent dataset that
// a rerun completes, skipping what is already there and intact.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace mugraph::dataset {

struct DatasetClassInput {
  graph::Program program;
  std::vector<graph::Schedule> schedules;  // each implements `program`
};

struct DatasetOptions {
  std::string outDir;
  std::vector<int> archs = {80, 90};
  bool runOnGpu = false;  // measure latency and GPU error (needs a GPU)
  int gpuRepetitions = 100;
  std::function<void(const std::string&)> progress;  // one line per event, may be empty
  // Test hook: stop the process abruptly (as a kill would) after writing this many variants.
  int abortAfterVariants = -1;
};

struct DatasetSummary {
  int classes = 0;
  int variants = 0;
  int written = 0;   // generated in this run
  int skipped = 0;   // already present and intact
  int rejected = 0;  // did not verify: left out of the dataset
};

DatasetSummary buildDataset(const std::vector<DatasetClassInput>& classes,
                            const DatasetOptions& options);

}  // namespace mugraph::dataset
