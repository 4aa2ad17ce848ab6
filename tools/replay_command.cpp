// `mugraph replay SCHEDULE --out DIR`: turns a saved schedule (or a program, through the
// default schedules of its ops) into standalone CUDA C++ printed from the plan for the
// requested targets, PTX per target, the first target's ptxas resource report and a launch
// manifest, without a GPU. `--run` runs and times it on
// the GPU through the runtime (runtime/), or exits 2 saying there is no GPU.
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "codegen/generate.h"
#include "codegen/nvrtc_compiler.h"
#include "graph/dynamic_dims.h"
#include "graph/error.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "plan/lower_predefined_ops.h"
#include "tools/commands.h"
#include "tools/dim_flags.h"
#include "tools/gpu_run.h"

namespace mugraph::tools {
namespace {

nlohmann::json summaryJson(const codegen::GeneratedCode& code, const std::string& dir,
                           const std::vector<std::string>& files) {
  nlohmann::json kernels = nlohmann::json::array();
  for (size_t k = 0; k < code.emitted.kernels.size(); ++k) {
    const codegen::EmittedKernel& kernel = code.emitted.kernels[k];
    const codegen::KernelResources& r = code.resources[k];
    kernels.push_back({{"entry", kernel.entry},
                       {"grid", kernel.grid},
                       {"block", {kernel.threads, 1, 1}},
                       {"dynamic_shared_bytes", kernel.dynamicSharedBytes},
                       {"registers", r.registers},
                       {"spill_store_bytes", r.spillStoreBytes},
                       {"spill_load_bytes", r.spillLoadBytes},
                       {"local_bytes", r.localBytes}});
  }
  return {{"schedule", code.schedule.name},
          {"schedule_hash", graph::hashHex(graph::scheduleHash(code.schedule))},
          {"out", dir},
          {"files", files},
          {"workspace_bytes", code.emitted.abi.workspaceBytes},
          {"kernels", kernels}};
}

void printSummary(const codegen::GeneratedCode& code, const std::string& dir,
                  const std::vector<std::string>& files) {
  std::cout << "schedule " << code.schedule.name << ": " << code.emitted.kernels.size()
            << " kernel(s), workspace " << code.emitted.abi.workspaceBytes << " B, NVRTC "
            << code.nvrtcVersion << "\n";
  for (size_t k = 0; k < code.emitted.kernels.size(); ++k) {
    const codegen::EmittedKernel& kernel = code.emitted.kernels[k];
    const codegen::KernelResources& r = code.resources[k];
    std::cout << "  " << kernel.entry << "  grid (" << kernel.grid[0] << ", " << kernel.grid[1]
              << ", " << kernel.grid[2] << ") x " << kernel.threads << " threads, "
              << kernel.dynamicSharedBytes << " B shared; " << code.resourceArch << ": "
              << r.registers << " registers, spills " << r.spillStoreBytes << "/"
              << r.spillLoadBytes << " B, local " << r.localBytes << " B\n";
  }
  std::cout << "wrote";
  for (const std::string& file : files) std::cout << " " << file;
  std::cout << " to " << dir << "\n";
}

// The schedule to generate: a saved one, or the program's through the default schedules of
// its ops; a dynamic one instantiated at the --dim lengths (static kernels for that length).
graph::Schedule scheduleToReplay(const std::string& file, const graph::DimValues& values,
                                 const codegen::GenerateOptions& generate) {
  const graph::LoadedFile loaded = graph::loadFile(file);
  if (!loaded.program.dims.empty() && values.empty()) {
    throw UserError(file,
                    "the program has dynamic dims: pass --dim NAME=LENGTH for each (replay "
                    "generates static kernels for one length)");
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
             "generate static kernels for that length (the schedule instantiated there; "
             "kernels taking the length at run time come later, issue 28)");
  return {sub, [options]() {
            codegen::GenerateOptions generate;
            generate.archs = codegen::parseArchList(options->archs);
            const graph::Schedule schedule =
                scheduleToReplay(options->file, dimValuesFromFlags(options->dims), generate);
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
                                     options->logitStd);
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
