#include "driver/superoptimize.h"

#include <chrono>
#include <iostream>
#include <optional>

#include "distributed/ranks.h"
#include "driver/variant_files.h"
#include "graph/error.h"
#include "search/builtin_programs.h"

namespace mugraph::driver {

namespace {

// A dynamic program's search options: whole-program candidates only (the pieces of a split
// program are searched as static programs of their own).

// A dynamic program for which the search built no length-independent candidate: bad input
// (exit 2), never "0 variants".
void requireLengthIndependentCandidates(const graph::Program& program,
                                        const search::SearchResult& result) {
  if (result.summary.candidates > 0) return;
  std::string dims;
  for (const graph::DynamicDim& d : program.dims) {
    dims += (dims.empty() ? "" : ", ") + d.name + " in [" + std::to_string(d.min) + ", " +
            std::to_string(d.max) + "]";
  }
  throw UserError(program.name,
                  "no length-independent schedule of this dynamic program was found (dims " + dims +
                      "): every candidate must cut each dynamic dim by the grid or by the "
                      "for-loop with a fixed tile, and none within the search's limits does (" +
                      whyNoVariants(result, {}) + ")");
}

}  // namespace

ProgramRun superoptimizeProgram(const graph::Program& program, const RunOptions& options,
                                const runtime::CudaDriver* gpu, SearchReuse* reuse,
                                const graph::Program* searchAs) {
  const bool dynamic = !program.dims.empty();
  search::SearchOptions searchOptions = searchOptionsFor(program, options);
  const plan::Target& target = *searchOptions.config.target;
  ProgramRun run;
  // Search and verify: enumerate, prune, rank by the cost model, verify the best. A dynamic
  // program is searched at its reference length, length-independent candidates only.
  // A program equal up to names to a model's earlier subgraph (its next layer) takes that
  // program's search, run once, renamed; the rest runs as for a search of its own.
  const auto searchStart = std::chrono::steady_clock::now();
  const graph::Program& searched = searchAs ? *searchAs : program;
  const search::SearchResult* kept = reuse ? reuse->find(searched) : nullptr;
  search::SearchResult result = kept ? *kept : search::superoptimize(searched, searchOptions);
  if (reuse && !kept) reuse->add(searched, result);
  std::string reusedFrom;
  if (searchAs) {
    std::optional<search::SearchResult> renamed = renamedResult(result, searched, program);
    if (renamed) {
      result = std::move(*renamed);
      reusedFrom = searched.name;
    } else {
      result = search::superoptimize(program, searchOptions);
    }
  }
  run.result = std::move(result);
  if (kept || !reusedFrom.empty()) {
    run.result.summary.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - searchStart).count();
  }
  if (run.result.summary.pieces > 0 && !searchOptions.checkpointPath.empty() &&
      distributed::isRoot()) {
    std::cerr << "mugraph: warning: --checkpoint: " << program.name << " was searched in "
              << run.result.summary.pieces
              << " pieces, which are not checkpointed; a rerun searches them again\n";
  }
  // A dynamic program: check every variant over the range, rank by the cost over the range.
  if (dynamic) {
    requireLengthIndependentCandidates(program, run.result);
    run.range = checkAndRankOverRange(run.result, program, target, searchOptions.verifySeed);
  }
  // Profile a dynamic program: its variants timed at every ranking length, checked where the
  // interpreter is quick; the range score and the dispatch follow the times.
  if (dynamic && gpu && distributed::isRoot()) {
    profileOverRange(*gpu, run.result, *run.range, program, target, options.out);
  }
  const RangeRun* range = run.range ? &*run.range : nullptr;
  // Profile: generate, check against the interpreter and time on the GPU of every rank that has
  // one of its own; drop what does not match, rank the rest by measured time. Every rank takes
  // part (options.profile is the same on all), rank 0 ranks.
  if (options.profile && !dynamic) {
    const GpuMeasurements measured =
        measureOnGpu(gpu, run.result, target, options.out, options.threads);
    if (distributed::isRoot()) {
      run.ranking = rankByMeasuredTime(run.result, measured.outcomes, options.out);
      std::vector<search::RankWork>& ranks = run.result.summary.ranks;
      ranks.resize(std::max(ranks.size(), measured.profiledByRank.size()));
      for (size_t r = 0; r < measured.profiledByRank.size(); ++r) {
        ranks[r].profiled = measured.profiledByRank[r];
      }
    }
  }
  // Write: every variant's code and the summary.
  if (!options.out.empty()) {
    run.withoutCode = writeVariants(run.result, run.ranking, target, options.out, options.threads,
                                    &program, range);
  }
  run.noVariants = whyNoVariants(run.result, run.ranking, range);
  run.summary = summaryJson(run.result, run.ranking, &program, range);
  if (!reusedFrom.empty()) run.summary["search_reused_from"] = reusedFrom;
  return run;
}

ProgramRun runProgram(const RunOptions& callerOptions) {
  const RunOptions options = onThisRank(callerOptions);
  // Rank 0 must have a GPU to profile on; every other rank times variants on its own, if any.
  const std::unique_ptr<runtime::CudaDriver> gpu =
      distributed::isRoot() ? openGpuForProfile(options.profile) : openGpuOfItsOwn(options.profile);
  if (!options.dims.empty()) throw UserError("--dim", "applies to ONNX models only");
  if (!options.dimRanges.empty()) {
    throw UserError("--dim-range", "applies to ONNX models only (a program declares its dims)");
  }
  const graph::Program program = search::loadProgramOrBuiltin(options.program);
  return superoptimizeProgram(program, options, gpu.get());
}

}  // namespace mugraph::driver
