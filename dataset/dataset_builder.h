// Builds an equivalent-PTX dataset: for each class (a program and schedules that implement
// it), verifies every member, generates its CUDA C++, PTX and manifest, and records a
// manifest row with file digests, launch information, resources and verification evidence.
// Each variant is written atomically (a temp folder, then rename) and the manifest is
// rewritten atomically after each one, so an interrupted run leaves a consistent dataset that
// a rerun completes, skipping what is already there and intact.
#pragma once

#include <functional>
#include <set>
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
  std::vector<int> archs = {90};  // the first one's plan is generated; see codegen/generate.h
  bool runOnGpu = false;          // measure latency and GPU error (needs a GPU)
  // Which device runOnGpu uses, from the number of devices (driver::gpuOfThisRank under
  // mpirun); empty: the first.
  std::function<int(int deviceCount)> chooseGpu;
  // Variants ("<class>/<variant>") already intact in the dataset a rank builds a part of
  // elsewhere (mugraph dataset under mpirun): skipped as rows of outDir are.
  std::set<std::string> alreadyPresent;
  int gpuRepetitions = 100;
  // Threads verifying and generating a class's variants at once (0: every core). The dataset's
  // files do not depend on it.
  int threads = 0;
  // One line per event, starting "<event> <class>/<variant>": skip, verify, reject,
  // generate, run, and "wrote" once a variant and the manifest row naming it are on disk.
  // May be empty. An exception it throws ends the build at that event, leaving the dataset
  // as a kill would (consistent, completed by a rerun): the way to cancel a build.
  std::function<void(const std::string&)> progress;
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
