#include <algorithm>
#include <string>

#include "distributed/ranks.h"
#include "driver/run_options.h"
#include "graph/cuda_limits.h"
#include "graph/error.h"

namespace mugraph::driver {

search::SearchOptions searchOptionsFor(const graph::Program& program, const RunOptions& o) {
  search::SearchOptions options;
  options.config = search::defaultConfig(search::classifyProgram(program));
  options.config.target = &plan::targetByName(o.arch);
  if (o.maxVariants) {
    options.config.maxVariants = *o.maxVariants;
    options.config.candidatePool = std::max(options.config.candidatePool, 4 * *o.maxVariants);
  }
  if (o.maxKernels) options.config.maxKernels = *o.maxKernels;
  if (o.maxBlockGraphs) options.config.maxBlockGraphKernels = *o.maxBlockGraphs;
  if (o.maxBlockOps) {
    // The limit holds for a GEMM's epilogue too.
    options.config.maxBlockOps = *o.maxBlockOps;
    options.config.maxEpilogueOps = std::min(options.config.maxEpilogueOps, *o.maxBlockOps - 1);
  }
  if (o.maxBlocks) options.config.maxGridBlocks = *o.maxBlocks;
  if (!o.forloops.empty()) options.config.forloopCandidates = o.forloops;
  if (!o.blockThreads.empty()) options.config.threadCandidates = o.blockThreads;
  if (o.noGridSplit) options.config.allowGridSplitReduction = false;
  if (o.noSplit) options.config.splitLargePrograms = false;
  if (o.noRecompute) options.config.recomputePrologues = false;
  for (int t : options.config.threadCandidates) {
    if (t < graph::kWarpSize || t > graph::kMaxThreadsPerBlock || t % graph::kWarpSize != 0) {
      throw UserError("--block-threads", std::to_string(t) + " is not a multiple of " +
                                             std::to_string(graph::kWarpSize) + " in " +
                                             std::to_string(graph::kWarpSize) + ".." +
                                             std::to_string(graph::kMaxThreadsPerBlock));
    }
  }
  for (int64_t f : options.config.forloopCandidates) {
    if (f < 1) throw UserError("--forloops", "trip counts must be >= 1");
  }
  options.threads = o.threads;
  options.timeLimitSeconds = o.timeLimit;
  options.checkpointPath = o.checkpoint;
  options.checkpointIntervalSeconds = o.checkpointInterval;
  options.resume = o.resume;
  options.progress = o.progress;
  return options;
}

RunOptions onThisRank(RunOptions options) {
  if (!distributed::isRoot()) {
    options.out.clear();
    options.progress = false;
  }
  return options;
}

}  // namespace mugraph::driver
