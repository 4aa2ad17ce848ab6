// The replay pipeline without a GPU (see generate.h).
#include "codegen/generate.h"

#include <filesystem>
#include <iostream>
#include <sstream>

#include "codegen/manifest.h"
#include "codegen/nvrtc_compiler.h"
#include "graph/error.h"
#include "graph/files.h"
#include "plan/schedule_plan.h"

namespace mugraph::codegen {

std::string archName(int arch) {
  return "sm_" + std::to_string(arch);
}

std::vector<int> parseArchList(const std::string& text) {
  std::vector<int> archs;
  for (const plan::Target* target : plan::parseTargetList(text)) {
    archs.push_back(target->computeCapability);
  }
  return archs;
}

namespace {

// The first kernel whose plan differs between two targets, described for the user.
std::string planDifference(const plan::SchedulePlan& a, const plan::SchedulePlan& b) {
  for (size_t k = 0; k < a.kernels.size() && k < b.kernels.size(); ++k) {
    if (a.kernels[k].sharedBytes != b.kernels[k].sharedBytes ||
        a.kernels[k].pipelineStages != b.kernels[k].pipelineStages) {
      return "kernel '" + a.lowered->graph.ops[k].name + "' is planned with " +
             std::to_string(a.kernels[k].sharedBytes) + " B of shared memory and " +
             std::to_string(a.kernels[k].pipelineStages) + " stages for " + a.target->name +
             " but " + std::to_string(b.kernels[k].sharedBytes) + " B and " +
             std::to_string(b.kernels[k].pipelineStages) + " stages for " + b.target->name;
    }
  }
  return "the default block graphs of its predefined ops differ";
}

}  // namespace

GeneratedCode generateCode(const graph::Schedule& schedule, const GenerateOptions& options) {
  if (options.archs.empty()) throw UserError("--arch", "names no architecture");
  GeneratedCode code;
  const plan::SchedulePlan planned =
      plan::planSchedule(schedule, plan::targetByName(archName(options.archs.front())));
  code.schedule = *planned.lowered;
  code.emitted = emitSchedule(planned);
  for (size_t i = 1; i < options.archs.size(); ++i) {
    const plan::SchedulePlan other =
        plan::planSchedule(schedule, plan::targetByName(archName(options.archs[i])));
    if (emitSchedule(other).source != code.emitted.source) {
      throw UserError("--arch", "schedule '" + schedule.name + "' needs a different plan per " +
                                    "architecture (" + planDifference(planned, other) +
                                    "); generate one architecture at a time");
    }
  }
  code.nvrtcVersion = nvrtcVersionText();
  code.resourceArch = archName(options.archs.front());
  const NvrtcOutput assembled =
      compileWithNvrtc(code.emitted.source, code.schedule.name, options.archs.front(), true,
                       code.emitted.archSpecific);
  code.cubin = assembled.cubin;
  // Registers, barriers and the stack frame from the cubin; spills, static shared memory and
  // serialized wgmma from ptxas's report, which NVRTC's log does not always hold
  // (cubinResources).
  const std::vector<KernelResources> reported = parsePtxasReport(assembled.log);
  const std::vector<KernelResources> assembledFacts = cubinResources(assembled.cubin);
  for (const EmittedKernel& kernel : code.emitted.kernels) {
    KernelResources resources;
    resources.entry = kernel.entry;
    bool inReport = false;
    for (const KernelResources& r : reported) {
      if (r.entry != kernel.entry) continue;
      resources = r;
      inReport = true;
    }
    for (const KernelResources& r : assembledFacts) {
      if (r.entry != kernel.entry) continue;
      resources.registers = r.registers;
      resources.barriers = r.barriers;
      resources.localBytes = r.localBytes;
    }
    if (!inReport) {
      std::cerr << "warning: schedule '" << schedule.name << "': NVRTC's log has no ptxas "
                << "report for " << kernel.entry
                << "; its spills and static shared memory are given as 0\n";
    }
    code.resources.push_back(resources);
  }
  for (int arch : options.archs) {
    const std::string name = archName(arch);
    if (code.ptx.count(name)) continue;
    if (name == code.resourceArch) {
      code.ptx[name] = assembled.ptx;
      code.options[name] = assembled.options;
      continue;
    }
    const NvrtcOutput compiled = compileWithNvrtc(code.emitted.source, code.schedule.name, arch,
                                                  false, code.emitted.archSpecific);
    code.ptx[name] = compiled.ptx;
    code.options[name] = compiled.options;
  }
  return code;
}

std::vector<std::string> writeGeneratedCode(const GeneratedCode& code, const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw UserError(dir, "cannot create the output folder: " + error.message());
  std::vector<std::string> written;
  const auto write = [&](const std::string& name, const std::string& text) {
    graph::writeFileAtomic((std::filesystem::path(dir) / name).string(), text);
    written.push_back(name);
  };
  write("kernel.cu", code.emitted.source);
  for (const auto& [arch, ptx] : code.ptx) write(arch + ".ptx", ptx);
  write("resources.json", resourcesJson(code).dump(2) + "\n");
  graph::saveSchedule((std::filesystem::path(dir) / "schedule.json").string(), code.schedule);
  written.push_back("schedule.json");
  write("manifest.json", manifestJson(code).dump(2) + "\n");
  return written;
}

}  // namespace mugraph::codegen
