// `mugraph replay SCHEDULE --out DIR`: turns a saved schedule (or a program, through the
// default schedules of its ops) into standalone CUDA C++ printed from the plan for the
// requested targets, PTX per target, the first target's ptxas resource report and a launch
// manifest, without a GPU. `--run` runs and times it on
// the GPU through the runtime (runtime/), or exits 2 saying there is no GPU. A dynamic
// schedule becomes kernels that take the lengths as parameters (one PTX for the range; --dim
// gives the length --run launches at), or with --static static kernels for the --dim length.
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "codegen/generate.h"
#include "codegen/nvrtc_compiler.h"
#include "graph/dynamic_dims.h"
#include "graph/dynamic_extents.h"
#include "graph/error.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "graph/json_reader.h"
#include "plan/lower_predefined_ops.h"
#include "tools/commands.h"
#include "tools/dim_flags.h"
#include "tools/gpu_run.h"

namespace mugraph::tools {
namespace {

// A kernel's grid: numbers, or the formulas of a kernel that takes the lengths.
nlohmann::json gridJson(const codegen::GeneratedCode& code, const codegen::EmittedKernel& kernel) {
  if (!kernel.launchCounts) return kernel.grid;
  nlohmann::json grid = nlohmann::json::array();
  for (const graph::LaunchCount& count : kernel.launchCounts->grid) {
    grid.push_back(graph::launchCountJson(count, code.schedule.graph));
  }
  return grid;
}

std::string gridText(const codegen::GeneratedCode& code, const codegen::EmittedKernel& kernel) {
  const nlohmann::json grid = gridJson(code, kernel);
  std::string text;
  for (const nlohmann::json& count : grid) {
    text += (text.empty() ? "" : ", ") + (count.is_number()
                                              ? count.dump()
                                              : "ceil(" + count["ceil_div"][0].get<std::string>() +
                                                    " / " + count["ceil_div"][1].dump() + ")");
  }
  return "(" + text + ")";
}

nlohmann::json summaryJson(const codegen::GeneratedCode& code, const std::string& dir,
                           const std::vector<std::string>& files) {
  nlohmann::json kernels = nlohmann::json::array();
  for (size_t k = 0; k < code.emitted.kernels.size(); ++k) {
    const codegen::EmittedKernel& kernel = code.emitted.kernels[k];
    const codegen::KernelResources& r = code.resources[k];
    kernels.push_back({{"entry", kernel.entry},
                       {"grid", gridJson(code, kernel)},
                       {"block", {kernel.threads, 1, 1}},
                       {"dynamic_shared_bytes", kernel.dynamicSharedBytes},
                       {"registers", r.registers},
                       {"spill_store_bytes", r.spillStoreBytes},
                       {"spill_load_bytes", r.spillLoadBytes},
                       {"local_bytes", r.localBytes}});
  }
  nlohmann::json summary = {{"schedule", code.schedule.name},
                            {"schedule_hash", graph::hashHex(graph::scheduleHash(code.schedule))},
                            {"out", dir},
                            {"files", files},
                            {"workspace_bytes", code.emitted.abi.workspaceBytes},
                            {"kernels", kernels}};
  if (!code.schedule.graph.dims.empty()) {
    summary["lengths"] = "kernel_parameters";
    summary["dims"] = graph::dynamicDimsToJson(code.schedule.graph.dims);
  }
  return summary;
}

void printSummary(const codegen::GeneratedCode& code, const std::string& dir,
                  const std::vector<std::string>& files) {
  std::cout << "schedule " << code.schedule.name << ": " << code.emitted.kernels.size()
            << " kernel(s), workspace " << code.emitted.abi.workspaceBytes << " B, NVRTC "
            << code.nvrtcVersion << "\n";
  if (!code.schedule.graph.dims.empty()) {
    std::string dims;
    for (const graph::DynamicDim& d : code.schedule.graph.dims) {
      dims += (dims.empty() ? "" : ", ") + d.name + " in [" + std::to_string(d.min) + ", " +
              std::to_string(d.max) + "] (" + codegen::dimParamName(d.name) + ")";
    }
    std::cout << "  kernels take the lengths as parameters: " << dims
              << "; one PTX for the range (workspace sized for the max)\n";
  }
  for (size_t k = 0; k < code.emitted.kernels.size(); ++k) {
    const codegen::EmittedKernel& kernel = code.emitted.kernels[k];
    const codegen::KernelResources& r = code.resources[k];
    std::cout << "  " << kernel.entry << "  grid " << gridText(code, kernel) << " x "
              << kernel.threads << " threads, " << kernel.dynamicSharedBytes << " B shared; "
              << code.resourceArch << ": " << r.registers << " registers, spills "
              << r.spillStoreBytes << "/" << r.spillLoadBytes << " B, local " << r.localBytes
              << " B\n";
  }
  std::cout << "wrote";
  for (const std::string& file : files) std::cout << " " << file;
  std::cout << " to " << dir << "\n";
}

// The schedule to generate: a saved one, or the program's through the default schedules of
// its ops; a dynamic one as it is (kernels that take the lengths) or, with `staticLength`,
// instantiated at the --dim lengths (static kernels for that length).
graph::Schedule scheduleToReplay(const std::string& file, const graph::DimValues& values,
                                 bool staticLength, const codegen::GenerateOptions& generate) {
  const graph::LoadedFile loaded = graph::loadFile(file);
  if (staticLength && values.empty()) {
    throw UserError("--static",
                    "needs --dim NAME=LENGTH for each dynamic dim (the length to "
                    "generate static kernels for)");
  }
  if (loaded.program.dims.empty() && !values.empty()) {
    throw UserError(file, "the program has no dynamic dims; --dim is for dynamic ones");
  }
  if (!staticLength) {
    if (!loaded.program.dims.empty() && !values.empty()) {
      graph::instantiate(loaded.program, values);  // the lengths are checked before generating
    }
    if (loaded.schedule) return *loaded.schedule;
    if (!loaded.program.dims.empty()) {
      throw UserError(file,
                      "a dynamic program has no default schedule that takes the lengths: "
                      "replay a schedule (from superoptimize), or pass --dim NAME=LENGTH "
                      "--static for static kernels of one length");
    }
    return plan::lowerProgram(loaded.program,
                              plan::targetByName(codegen::archName(generate.archs.front())));
  }
  if (loaded.schedule) {
    return values.empty() ? *loaded.schedule : graph::instantiate(*loaded.schedule, values);
  }
  return plan::lowerProgram(
      values.empty() ? loaded.program : graph::instantiate(loaded.program, values),
      plan::targetByName(codegen::archName(generate.archs.front())));
}

}  // namespace

Command addReplayCommand(CLI::App& app) {
  struct Options {
    std::string file;
    std::string out;
    std::string archs = codegen::kDefaultArchList;
    bool json = false;
    bool run = false;
    int repetitions = 100;
    std::optional<uint64_t> seed;
    std::optional<double> logitStd;
    std::vector<std::string> dims;
    bool staticLength = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "replay",
      "Generate standalone CUDA C++ and PTX for a saved schedule (or a program, through the "
      "default schedules of its ops) with NVRTC: kernel.cu, <arch>.ptx, resources.json (ptxas "
      "report of the first --arch), schedule.json and manifest.json in DIR. No GPU needed.");
  sub->add_option("SCHEDULE", options->file, "schedule JSON (or program) file")->required();
  sub->add_option("--out", options->out, "output folder (created if missing)")->required();
  sub->add_option("--arch", options->archs,
                  "targets, comma-separated (sm_80, sm_90): one kernel.cu planned for them, PTX "
                  "for each; fails if the schedule plans differently on them")
      ->capture_default_str();
  sub->add_flag("--json", options->json, "print a JSON summary");
  sub->add_flag("--run", options->run,
                "also run on the GPU: random inputs, outputs poisoned first, compared with the "
                "interpreter, then timed over CUDA-graph replays (exit 1 if it does not match)");
  sub->add_option("--repetitions", options->repetitions, "timed replays with --run")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  sub->add_option("--seed", options->seed, "input seed with --run (default: fresh)");
  sub->add_option("--logit-std", options->logitStd,
                  "with --run, attention programs: normal inputs whose logits have this "
                  "standard deviation (real models reach 16; default: inputs uniform in "
                  "[-0.5, 0.5])")
      ->check(CLI::PositiveNumber);
  addDimFlag(*sub, options->dims,
             "a dynamic schedule's length: --run launches its kernels, which take the lengths "
             "as parameters, at it (with --static: static kernels generated for it)");
  sub->add_flag("--static", options->staticLength,
                "with --dim: generate static kernels for that length (the schedule "
                "instantiated there) instead of kernels that take the lengths");
  return {sub, [options]() {
            codegen::GenerateOptions generate;
            generate.archs = codegen::parseArchList(options->archs);
            const graph::DimValues dims = dimValuesFromFlags(options->dims);
            const graph::Schedule schedule =
                scheduleToReplay(options->file, dims, options->staticLength, generate);
            const bool takesLengths = !schedule.program.dims.empty();
            if (options->run && takesLengths && dims.empty()) {
              throw UserError("--run",
                              "the kernels take the lengths of dynamic dims: pass --dim "
                              "NAME=LENGTH for each, the length to launch at");
            }
            codegen::GeneratedCode code;
            try {
              code = codegen::generateCode(schedule, generate);
            } catch (const codegen::CompileError& e) {
              // A valid schedule that does not compile is a code generator bug.
              std::cerr << "mugraph: internal error: " << e.what() << "\n";
              return kExitInternalError;
            }
            const std::vector<std::string> files = codegen::writeGeneratedCode(code, options->out);
            nlohmann::json summary = summaryJson(code, options->out, files);
            if (!options->json) printSummary(code, options->out, files);
            if (!options->run) {
              if (options->json) std::cout << summary.dump() << "\n";
              return kExitOk;
            }
            nlohmann::json gpu;
            try {
              const uint64_t seed = options->seed ? *options->seed : std::random_device{}();
              gpu = runScheduleOnGpu(code.schedule, options->out, seed, options->repetitions,
                                     options->logitStd, takesLengths ? dims : graph::DimValues{});
            } catch (const GpuUnavailable& e) {
              std::cerr << "mugraph: " << e.what() << " (the generated files are in "
                        << options->out << ")\n";
              return kExitBadInput;
            }
            if (options->json) {
              summary["gpu"] = gpu;
              std::cout << summary.dump() << "\n";
            } else {
              std::cout << describeGpuRun(gpu);
            }
            return gpu.at("matches").get<bool>() ? kExitOk : kExitCheckFailed;
          }};
}

}  // namespace mugraph::tools
