// The pipeline as one library call: a program (or each subgraph of an ONNX model) goes from
// search to written variants. The CLI (`mugraph superoptimize`, `mugraph dataset`) only parses
// flags, calls this and prints; superoptimize.cpp lists the steps in order.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "driver/gpu_profile.h"
#include "driver/range_ranking.h"
#include "driver/run_options.h"
#include "driver/search_reuse.h"
#include "graph/ir.h"
#include "runtime/cuda_driver.h"
#include "search/superoptimize.h"

namespace mugraph::driver {

struct ProgramRun {
  search::SearchResult result;    // the verified variants, best first
  ProfileRanking ranking;         // --profile: measured times and the variants dropped
  std::optional<RangeRun> range;  // a dynamic program: its range check and ranking
  int withoutCode = 0;            // verified variants that got no code (an internal error)
  std::string noVariants;         // why no variant is left; empty when there are variants
  nlohmann::json summary;         // what out/summary.json holds
};

// Search, verify, (with `gpu`) generate, check and time on the GPU and re-rank, then write
// the variants under options.out when it is set. A dynamic program (dims declared) is
// searched at its reference length for length-independent schedules only, which are checked
// and ranked over the range (range_ranking.h); UserError when none can be built, and for
// --profile (kernels taking the extents come in a later slice of issue 28).
// With `searchAs` (a program equal to `program` up to names, a model's first subgraph of the
// kind), that program is searched instead and its variants renamed to `program`'s (its summary
// says `search_reused_from`); `reuse` keeps the searches run, so each is run once.
ProgramRun superoptimizeProgram(const graph::Program& program, const RunOptions& options,
                                const runtime::CudaDriver* gpu, SearchReuse* reuse = nullptr,
                                const graph::Program* searchAs = nullptr);

// The same for options.program, a built-in name or a program file; opens the GPU for
// --profile (UserError without one).
ProgramRun runProgram(const RunOptions& options);

struct ModelRun {
  nlohmann::json summary;            // what out/summary.json holds (onnx_import/README.md)
  int internalErrors = 0;            // subgraphs whose search failed, variants without code
  int subgraphsWithoutVariants = 0;  // each says why in its summary entry
};

// options.program is an ONNX model: every subgraph is searched as a program of its own and
// written under out/<subgraph>/, with out/summary.json for the model.
ModelRun runModel(const RunOptions& options);

}  // namespace mugraph::driver
