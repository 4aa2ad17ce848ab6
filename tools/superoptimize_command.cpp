// `mugraph superoptimize PROGRAM`: the flags of driver::runProgram (a built-in name or a
// program file; an ONNX model goes to driver::runModel), and the ranked table (or JSON with
// --json) it prints. Searching, verifying, profiling and writing are the driver's.
#include <cstdio>
#include <iostream>
#include <memory>

#include "distributed/ranks.h"
#include "driver/superoptimize.h"
#include "driver/variant_files.h"
#include "graph/hash.h"
#include "onnx_import/onnx_model.h"
#include "search/builtin_programs.h"
#include "search/range_cost.h"
#include "tools/commands.h"
#include "tools/print_model_run.h"

namespace mugraph::tools {
namespace {

// A dynamic program: the lengths the ranking used and each variant's range verdict.
void printRange(const driver::ProgramRun& run) {
  const driver::RangeRun& range = *run.range;
  std::string lengths;
  for (const graph::DimValues& values : range.rankingLengths) {
    lengths += (lengths.empty() ? "" : "; ") + graph::dimValuesText(values);
  }
  std::printf("ranked over the range by %s: %s, at %s (cost above: at %s)\n",
              range.measured ? "measured GPU time" : "the cost model",
              search::kRangeRankingAggregate, lengths.c_str(),
              graph::dimValuesText(range.searchedAt).c_str());
  for (const std::string& dropped : range.droppedOnGpu) {
    std::printf("  dropped on the GPU: %s\n", dropped.c_str());
  }
  for (const search::VerifiedVariant& v : run.result.variants) {
    const driver::RangeVariant& rv = range.variants.at(v.name);
    std::printf("  %-18s  range score %.3f, equivalent at %zu lengths:", v.name.c_str(), rv.score,
                rv.check.lengths.size());
    for (const verify::LengthVerdict& l : rv.check.lengths) {
      std::printf(" %s", graph::dimValuesText(l.length.values).c_str());
    }
    std::printf("\n");
  }
  for (const std::string& name : range.dropped) {
    std::printf("  %-18s  dropped: not equivalent over the range\n", name.c_str());
  }
  if (range.dispatch.empty()) return;
  std::printf("dispatch over %s (a variant switched in where %s %.0f%% or more faster; "
              "dispatch.json):\n",
              range.dispatchDim.c_str(),
              range.measured ? "it measured" : "the cost model estimates it",
              100 * search::kDispatchMargin);
  for (const driver::DispatchBucket& b : range.dispatch) {
    std::printf("  %s in [%lld, %lld]  %-18s  %.2f us %s at %lld\n", range.dispatchDim.c_str(),
                static_cast<long long>(b.min), static_cast<long long>(b.max), b.variant.c_str(),
                b.microseconds, range.measured ? "measured" : "estimated",
                static_cast<long long>(b.max));
  }
}

void printTable(const driver::ProgramRun& run) {
  const search::SearchResult& result = run.result;
  const search::SearchSummary& s = result.summary;
  std::printf("%4s  %-18s  %-16s  %10s  %7s  %-16s  %-12s  %9s\n", "rank", "name", "hash",
              "cost (us)", "kernels", "grids", "level", "bound");
  for (size_t i = 0; i < result.variants.size(); ++i) {
    const search::VerifiedVariant& v = result.variants[i];
    std::printf("%4zu  %-18s  %-16s  %10.2f  %7zu  %-16s  %-12s  %9.2e\n", i + 1, v.name.c_str(),
                graph::hashHex(v.hash).c_str(), v.cost.microseconds, v.schedule.graph.ops.size(),
                driver::gridsOf(v.schedule.graph).c_str(), v.verification.level.c_str(),
                v.verification.falseAcceptBound);
  }
  if (run.range) printRange(run);
  uint64_t pruned = 0;
  for (uint64_t n : s.stats.pruned) pruned += n;
  std::printf(
      "states %llu, pruned %llu, candidates %llu, verified %llu, rejected %llu, %.1f s%s\n",
      static_cast<unsigned long long>(s.stats.states), static_cast<unsigned long long>(pruned),
      static_cast<unsigned long long>(s.candidates), static_cast<unsigned long long>(s.verified),
      static_cast<unsigned long long>(s.rejected), s.seconds,
      s.complete ? "" : " (incomplete: resume with --checkpoint F --resume)");
}

}  // namespace

Command addSuperoptimizeCommand(CLI::App& app) {
  auto o = std::make_shared<driver::RunOptions>();
  auto json = std::make_shared<bool>(false);
  std::string builtins;
  for (const search::BuiltinProgram& program : search::builtinPrograms()) {
    builtins += (builtins.empty() ? "" : ", ") + program.name;
  }
  CLI::App* sub = app.add_subcommand(
      "superoptimize",
      "Search schedules of PROGRAM (a built-in: " + builtins +
          "; a program file; or an ONNX model, model.onnx, whose maximal supported subgraphs are "
          "each searched, the rest listed with the reason), verify the best (on scaled twins where "
          "map dims allow, verify/README.md), rank "
          "them by the cost model. A program with dynamic dims (`dim s in [1, 65536]`) is "
          "searched at the range's max for schedules with fixed tiles along every dynamic dim, "
          "each variant checked at lengths covering the range (dropped if not equivalent at "
          "one) and ranked over the range by the cost model, or with --profile by times measured at "
          "each ranking length (summary.json 'range'); its folders "
          "hold kernels that take the lengths (one PTX for the range), and for one dynamic dim "
          "dispatch.json names the variant that runs each bucket of lengths. "
          "Exit 0 ok, 1 no verified variant (the summary says why; for a model, a subgraph "
          "without one), 2 bad input, 3 a verified variant got no code (an internal error; the "
          "rest is written).");
  sub->add_option("PROGRAM", o->program, "built-in program name, program file or .onnx model")
      ->required();
  sub->add_option("--threads", o->threads, "worker threads (default: every core)")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--time-limit", o->timeLimit,
                  "stop enumerating after S seconds (resumable with --checkpoint; for a model, per "
                  "subgraph); checking what was found comes after, and for a program searched "
                  "in pieces the check of their join can take longer than the search")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--arch", o->arch,
                  "target the search plans, prunes and ranks for and the code is generated for "
                  "(sm_90: H100/H200, sm_80: A100)")
      ->capture_default_str();
  sub->add_option("--out", o->out,
                  "write DIR/<variant>/ (schedule.json, kernel.cu, PTX for --arch, manifest.json) "
                  "and DIR/summary.json; for a model DIR/<subgraph>/ (program.mg and its "
                  "variants) and DIR/summary.json (subgraphs, and the nodes left out)");
  sub->add_option("--checkpoint", o->checkpoint,
                  "checkpoint file, written every --checkpoint-interval seconds (under mpirun by "
                  "rank 0, with every rank's finished subtrees)");
  sub->add_option("--checkpoint-interval", o->checkpointInterval, "seconds between checkpoints")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  sub->add_flag("--resume", o->resume,
                "continue the search saved in --checkpoint; for a model, keep the subgraphs "
                "already finished under --out and search the rest");
  addSpreadOption(sub, o->spread, "model's subgraphs, searched");
  sub->add_flag(
      "--profile", o->profile,
      "rank variants by their measured GPU time (generated, checked and timed on the GPU; under "
      "mpirun on every rank with a GPU of its own); a variant whose GPU result does not match "
      "the interpreter is dropped");
  sub->add_flag("--json", *json, "print the summary as one JSON object");
  sub->add_option("--max-variants", o->maxVariants, "variants to verify and report")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--max-kernels", o->maxKernels, "kernels per candidate")
      ->check(CLI::Range(1, 16));
  sub->add_option("--max-block-graphs", o->maxBlockGraphs, "block-graph kernels per candidate")
      ->check(CLI::Range(0, 16));
  sub->add_option(
         "--max-block-ops", o->maxBlockOps,
         "program ops fused into one block graph, a GEMM's epilogue included (default: 8; 12 "
         "for attention, norm + matmul programs and model subgraphs; a GEMM's "
         "element-wise epilogue may pass it by up to 16 ops unless this is given)")
      ->check(CLI::Range(1, 64));
  sub->add_option("--max-blocks", o->maxBlocks, "blocks per kernel")->check(CLI::Range(1, 1 << 20));
  sub->add_option("--forloops", o->forloops, "for-loop trip counts to try")->delimiter(',');
  sub->add_option("--block-threads", o->blockThreads, "threads per block to try")->delimiter(',');
  sub->add_flag("--no-grid-split", o->noGridSplit, "never split a reduction across the grid");
  sub->add_flag("--no-split", o->noSplit,
                "search the whole program only, never in pieces joined afterwards");
  sub->add_flag("--no-recompute", o->noRecompute,
                "search the program as written only, not also with a value several matmuls "
                "read (a norm before Q, K and V) computed once per matmul");
  sub->add_option("--dim", o->dims,
                  "for an ONNX model: pin a symbolic dim (ONNX dim_param) to a static size, "
                  "name=value (repeatable; takes precedence over --dim-range)");
  sub->add_option("--dim-range", o->dimRanges,
                  "for an ONNX model: the range of a symbolic dim left dynamic, name=min:max "
                  "(repeatable; default 1:65536; the search runs at the max)");
  return {sub, [o, json]() {
            // Under mpirun every rank runs the search and computes the same result; rank 0
            // alone prints it.
            if (onnx_import::isOnnxPath(o->program)) {
              const driver::ModelRun run = driver::runModel(*o);
              return distributed::isRoot() ? printModelRun(run, *json) : modelExitCode(run);
            }
            const driver::ProgramRun run = driver::runProgram(*o);
            if (distributed::isRoot()) {
              if (!run.noVariants.empty()) {
                std::cerr << "mugraph: no verified variant: " << run.noVariants << "\n";
              }
              if (*json) {
                std::cout << run.summary.dump() << "\n";
              } else {
                printTable(run);
              }
            }
            if (run.withoutCode > 0) return kExitInternalError;
            return run.noVariants.empty() ? kExitOk : kExitCheckFailed;
          }};
}

}  // namespace mugraph::tools
