// What one run of the pipeline (driver/superoptimize.h) is asked to do: the program or
// model, the search's limits, the target, GPU profiling and where the variants go. The CLI
// fills it from its flags; every field has the default the CLI documents.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "plan/target.h"
#include "search/superoptimize.h"

namespace mugraph::driver {

struct RunOptions {
  std::string program;   // a built-in name, a program file or an .onnx model
  int threads = 0;       // 0: every core
  double timeLimit = 0;  // seconds, 0: none; for a model, per subgraph
  std::string arch = plan::kDefaultTarget;
  std::string out;  // empty: nothing written
  std::string checkpoint;
  double checkpointInterval = 5;  // seconds between checkpoints
  bool resume = false;
  bool profile = false;  // rank by measured GPU time (needs a GPU)
  bool progress = true;  // the search's progress line on stderr (a terminal only)
  std::optional<int> maxVariants, maxKernels, maxBlockGraphs, maxBlockOps;
  std::optional<int64_t> maxBlocks;
  std::vector<int64_t> forloops;
  std::vector<int> blockThreads;
  bool noGridSplit = false;
  bool noSplit = false;
  bool noRecompute = false;  // search::SearchConfig::recomputePrologues off
  std::vector<std::string> dims;       // name=value pins of an ONNX model's dynamic dims
  std::vector<std::string> dimRanges;  // name=min:max ranges of an ONNX model's dynamic dims
  // A model's subgraphs over the ranks: "items" (each whole on one rank), "searches" (one after
  // another, each search spread) or "auto" (distributed/work_queue.h: chooseSpread).
  std::string spread = "auto";
};

// The search space for one program: its kind's defaults, then the options. Throws UserError
// on a limit the search cannot take.
search::SearchOptions searchOptionsFor(const graph::Program& program, const RunOptions& o);

// The options as this rank runs them (distributed/ranks.h): rank 0 alone writes the outputs;
// the other ranks search and verify with it and, with --profile, time variants on a GPU of
// their own (driver/gpu_profile.h).
RunOptions onThisRank(RunOptions options);

}  // namespace mugraph::driver
