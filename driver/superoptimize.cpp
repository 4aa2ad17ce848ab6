#include "driver/superoptimize.h"

#include <iostream>

#include "distributed/ranks.h"
#include "driver/variant_files.h"
#include "graph/error.h"
#include "search/builtin_programs.h"

namespace mugraph::driver {

ProgramRun superoptimizeProgram(const graph::Program& program, const RunOptions& options,
                                const runtime::CudaDriver* gpu) {
  if (!program.dims.empty()) {
    throw UserError(program.name,
                    "the program has dynamic dims: searching a dynamic program comes in a later "
                    "slice of issue 28 (check and replay a dynamic schedule with --dim)");
  }
  const search::SearchOptions searchOptions = searchOptionsFor(program, options);
  const plan::Target& target = *searchOptions.config.target;
  ProgramRun run;
  // Search and verify: enumerate, prune, rank by the cost model, verify the best.
  run.result = search::superoptimize(program, searchOptions);
  if (run.result.summary.pieces > 0 && !searchOptions.checkpointPath.empty() &&
      distributed::isRoot()) {
    std::cerr << "mugraph: warning: --checkpoint: " << program.name << " was searched in "
              << run.result.summary.pieces
              << " pieces, which are not checkpointed; a rerun searches them again\n";
  }
  // Profile: generate, check against the interpreter and time on the GPU; drop what does not
  // match, rank the rest by measured time.
  if (gpu) {
    const std::vector<GpuOutcome> outcomes = measureOnGpu(*gpu, run.result, target, options.out);
    run.ranking = rankByMeasuredTime(run.result, outcomes, options.out);
  }
  // Write: every variant's code and the summary.
  if (!options.out.empty()) {
    run.withoutCode = writeVariants(run.result, run.ranking, target, options.out);
  }
  run.noVariants = whyNoVariants(run.result, run.ranking);
  run.summary = summaryJson(run.result, run.ranking);
  return run;
}

ProgramRun runProgram(const RunOptions& callerOptions) {
  const RunOptions options = onThisRank(callerOptions);
  const std::unique_ptr<runtime::CudaDriver> gpu = openGpuForProfile(options.profile);
  if (!options.dims.empty()) throw UserError("--dim", "applies to ONNX models only");
  const graph::Program program = search::loadProgramOrBuiltin(options.program);
  return superoptimizeProgram(program, options, gpu.get());
}

}  // namespace mugraph::driver
