// `mugraph superoptimize PROGRAM`: searches schedules of a program (a built-in name or a
// file), verifies the best at their real shapes, writes each variant's schedule JSON under
// --out, and prints a ranked table (or JSON with --json).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "codegen/generate.h"
#include "graph/cuda_limits.h"
#include "graph/error.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "onnx_import/onnx_model.h"
#include "plan/lower_predefined_ops.h"
#include "runtime/cuda_driver.h"
#include "runtime/gpu_check.h"
#include "search/builtin_programs.h"
#include "search/superoptimize.h"
#include "tools/commands.h"
#include "tools/superoptimize_support.h"

namespace mugraph::tools {
namespace {

// The code of a variant for the target it was searched for, as `mugraph replay --arch`
// generates it.
codegen::GeneratedCode variantCode(const graph::Schedule& schedule, const plan::Target& target) {
  codegen::GenerateOptions options;
  options.archs = {target.computeCapability};
  return codegen::generateCode(schedule, options);
}

// Each verified variant gets its CUDA C++, PTX, resource report and launch manifest next to
// its schedule, exactly as `mugraph replay` writes them.
void emitVariantCode(const graph::Schedule& schedule, const plan::Target& target,
                     const std::string& variantDir) {
  const codegen::GeneratedCode code = variantCode(schedule, target);
  codegen::writeGeneratedCode(code, variantDir);
}

std::string gridsOf(const graph::KernelGraph& graph) {
  std::string grids;
  for (const graph::KernelOp& op : graph.ops) {
    if (!grids.empty()) grids += " ";
    grids += op.block ? std::to_string(op.block->blocks()) : "-";
  }
  return grids;
}

}  // namespace

nlohmann::json summaryJson(const search::SearchResult& result, const Measurements& measured) {
  const search::SearchSummary& s = result.summary;
  nlohmann::json pruned = nlohmann::json::object();
  for (const auto& [name, count] : search::pruneCountsByName(s.stats.pruned)) pruned[name] = count;
  nlohmann::json variants = nlohmann::json::array();
  for (const search::VerifiedVariant& v : result.variants) {
    variants.push_back({{"name", v.name},
                        {"hash", graph::hashHex(v.hash)},
                        {"cost", v.cost.microseconds},
                        {"level", v.verification.level},
                        {"false_accept_bound", v.verification.falseAcceptBound},
                        {"kernels", v.schedule.graph.ops.size()},
                        {"grids", gridsOf(v.schedule.graph)}});
    if (measured.count(v.name)) variants.back()["measured_us"] = measured.at(v.name);
  }
  return {{"states", s.stats.states},
          {"pruned", pruned},
          {"candidates", s.candidates},
          {"verified", s.verified},
          {"rejected", s.rejected},
          {"not_emittable", s.notEmittable},
          {"seconds", s.seconds},
          {"complete", s.complete},
          {"stopped_by_time_limit", s.stoppedByTimeLimit},
          {"subtrees", s.subtrees},
          {"subtrees_completed", s.subtreesCompleted},
          {"forms", s.forms},
          {"oracle",
           {{"queries", s.oracle.queries},
            {"cache_hits", s.oracle.cacheHits},
            {"z3_queries", s.oracle.z3Queries},
            {"timeouts", s.oracle.timeouts}}},
          {"ranked_by", measured.empty() ? "cost_model" : "measured_gpu_time"},
          {"variants", variants}};
}

// --profile: every variant generated, checked and timed on the GPU, then ranked by its
// measured median time (a variant whose code cannot be emitted or that does not match the
// interpreter on the GPU goes last, with a warning).
Measurements profileOnGpu(const runtime::CudaDriver& driver, search::SearchResult& result,
                          const plan::Target& target, const std::string& out) {
  Measurements measured;
  const std::string scratch = out.empty() ? (std::filesystem::temp_directory_path() /
                                             ("mugraph_profile_" + std::to_string(::getpid())))
                                                .string()
                                          : out;
  for (const search::VerifiedVariant& v : result.variants) {
    const std::string dir = scratch + "/" + v.name;
    double us = std::numeric_limits<double>::infinity();
    try {
      const codegen::GeneratedCode code = variantCode(v.schedule, target);
      codegen::writeGeneratedCode(code, dir);
      const runtime::GpuCheckReport r =
          runtime::checkOnGpu(driver, code.schedule, dir, v.hash, /*repetitions=*/50);
      if (r.matches) {
        us = r.timing.medianMicroseconds;
      } else {
        std::cerr << "mugraph: warning: " << v.name << " does not match on the GPU (error "
                  << r.maxRelError << ")\n";
      }
    } catch (const std::exception& e) {
      std::cerr << "mugraph: warning: " << v.name << ": not profiled: " << e.what() << "\n";
    }
    measured[v.name] = us;
    std::cerr << "profile: " << v.name << " " << us << " us\n";
  }
  if (out.empty()) std::filesystem::remove_all(scratch);
  std::stable_sort(result.variants.begin(), result.variants.end(),
                   [&](const search::VerifiedVariant& a, const search::VerifiedVariant& b) {
                     return measured[a.name] < measured[b.name];
                   });
  return measured;
}

namespace {

void printTable(const search::SearchResult& result) {
  const search::SearchSummary& s = result.summary;
  std::printf("%4s  %-18s  %-16s  %10s  %7s  %-16s  %-12s  %9s\n", "rank", "name", "hash",
              "cost (us)", "kernels", "grids", "level", "bound");
  for (size_t i = 0; i < result.variants.size(); ++i) {
    const search::VerifiedVariant& v = result.variants[i];
    std::printf("%4zu  %-18s  %-16s  %10.2f  %7zu  %-16s  %-12s  %9.2e\n", i + 1, v.name.c_str(),
                graph::hashHex(v.hash).c_str(), v.cost.microseconds, v.schedule.graph.ops.size(),
                gridsOf(v.schedule.graph).c_str(), v.verification.level.c_str(),
                v.verification.falseAcceptBound);
  }
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

// The search space for one program: its kind's defaults, then the flags.
search::SearchOptions searchOptionsFor(const graph::Program& program,
                                       const SuperoptimizeOptions& o) {
  search::SearchOptions options;
  options.config = search::defaultConfig(search::classifyProgram(program));
  options.config.target = &plan::targetByName(o.arch);
  if (o.maxVariants) {
    options.config.maxVariants = *o.maxVariants;
    options.config.candidatePool = std::max(options.config.candidatePool, 4 * *o.maxVariants);
  }
  if (o.maxKernels) options.config.maxKernels = *o.maxKernels;
  if (o.maxBlockGraphs) options.config.maxBlockGraphKernels = *o.maxBlockGraphs;
  if (o.maxBlockOps) options.config.maxBlockOps = *o.maxBlockOps;
  if (o.maxBlocks) options.config.maxGridBlocks = *o.maxBlocks;
  if (!o.forloops.empty()) options.config.forloopCandidates = o.forloops;
  if (!o.blockThreads.empty()) options.config.threadCandidates = o.blockThreads;
  if (o.noGridSplit) options.config.allowGridSplitReduction = false;
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
  options.resume = o.resume;
  return options;
}

// Writes every variant's files under `out` and `out/summary.json`; returns how many verified
// variants got no code (a code generator bug: the rest is still written).
int writeVariants(const search::SearchResult& result, const Measurements& measured,
                  const plan::Target& target, const std::string& out) {
  int withoutCode = 0;
  std::filesystem::create_directories(out);
  for (const search::VerifiedVariant& v : result.variants) {
    const std::string dir = out + "/" + v.name;
    // --profile already generated (and timed) the code of every variant it measured, in
    // this same folder.
    const auto profiled = measured.find(v.name);
    if (profiled != measured.end() && std::isfinite(profiled->second)) continue;
    std::filesystem::create_directories(dir);
    try {
      emitVariantCode(v.schedule, target, dir);  // + schedule.json
    } catch (const std::exception& e) {
      graph::saveSchedule(dir + "/schedule.json", v.schedule);
      std::cerr << "mugraph: internal error: " << v.name
                << ": verified, but no code was generated: " << e.what() << "\n";
      ++withoutCode;
    }
  }
  graph::writeFileAtomic(out + "/summary.json", summaryJson(result, measured).dump(2) + "\n");
  return withoutCode;
}

std::unique_ptr<runtime::CudaDriver> driverForProfile(bool profile) {
  if (!profile) return nullptr;
  std::string whyNot;
  std::unique_ptr<runtime::CudaDriver> driver = runtime::CudaDriver::open(whyNot);
  if (!driver) {
    throw UserError("--profile",
                    "needs a GPU: " + whyNot + " (drop --profile to rank by the cost model)");
  }
  return driver;
}

Command addSuperoptimizeCommand(CLI::App& app) {
  auto o = std::make_shared<SuperoptimizeOptions>();
  std::string builtins;
  for (const search::BuiltinProgram& program : search::builtinPrograms()) {
    builtins += (builtins.empty() ? "" : ", ") + program.name;
  }
  CLI::App* sub = app.add_subcommand(
      "superoptimize",
      "Search schedules of PROGRAM (a built-in: " + builtins +
          "; a program file; or an ONNX model, model.onnx, whose maximal supported subgraphs are "
          "each searched, the rest listed with the reason), verify the best at real shapes, rank "
          "them by the cost model. "
          "Exit 0 ok, 2 bad input, 3 a verified variant got no code (an internal error; the "
          "rest is written).");
  sub->add_option("PROGRAM", o->program, "built-in program name, program file or .onnx model")
      ->required();
  sub->add_option("--threads", o->threads, "worker threads (default: every core)")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--time-limit", o->timeLimit,
                  "stop enumerating after S seconds (resumable with --checkpoint; for a model, per "
                  "subgraph)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--arch", o->arch,
                  "target the search plans, prunes and ranks for and the code is generated for "
                  "(sm_90: H100/H200, sm_80: A100)")
      ->capture_default_str();
  sub->add_option("--out", o->out,
                  "write DIR/<variant>/ (schedule.json, kernel.cu, PTX for --arch, manifest.json) "
                  "and DIR/summary.json; for a model DIR/<subgraph>/ (program.mg and its "
                  "variants) and DIR/summary.json (subgraphs, and the nodes left out)");
  sub->add_option("--checkpoint", o->checkpoint, "checkpoint file, written every few seconds");
  sub->add_flag("--resume", o->resume, "continue the search saved in --checkpoint");
  sub->add_flag(
      "--profile", o->profile,
      "rank variants by their measured GPU time (generated, checked and timed on the GPU)");
  sub->add_flag("--json", o->json, "print the summary as one JSON object");
  sub->add_option("--max-variants", o->maxVariants, "variants to verify and report")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--max-kernels", o->maxKernels, "kernels per candidate")
      ->check(CLI::Range(1, 16));
  sub->add_option("--max-block-graphs", o->maxBlockGraphs, "block-graph kernels per candidate")
      ->check(CLI::Range(0, 16));
  sub->add_option("--max-block-ops", o->maxBlockOps, "program ops fused into one block graph")
      ->check(CLI::Range(1, 64));
  sub->add_option("--max-blocks", o->maxBlocks, "blocks per kernel")->check(CLI::Range(1, 1 << 20));
  sub->add_option("--forloops", o->forloops, "for-loop trip counts to try")->delimiter(',');
  sub->add_option("--block-threads", o->blockThreads, "threads per block to try")->delimiter(',');
  sub->add_flag("--no-grid-split", o->noGridSplit, "never split a reduction across the grid");
  sub->add_option("--dim", o->dims,
                  "for an ONNX model: pin a dynamic dim, name=value (repeatable)");
  return {
      sub, [o]() {
        if (onnx_import::isOnnxPath(o->program)) return superoptimizeModel(*o);
        const std::unique_ptr<runtime::CudaDriver> driver = driverForProfile(o->profile);
        if (!o->dims.empty()) throw UserError("--dim", "applies to ONNX models only");
        const graph::Program program = search::loadProgramOrBuiltin(o->program);
        const search::SearchOptions options = searchOptionsFor(program, *o);
        search::SearchResult result = search::superoptimize(program, options);
        const Measurements measured =
            driver ? profileOnGpu(*driver, result, *options.config.target, o->out) : Measurements{};
        const int withoutCode =
            o->out.empty() ? 0 : writeVariants(result, measured, *options.config.target, o->out);
        if (o->json) {
          std::cout << summaryJson(result, measured).dump() << "\n";
        } else {
          printTable(result);
        }
        return withoutCode == 0 ? kExitOk : kExitInternalError;
      }};
}

}  // namespace mugraph::tools
