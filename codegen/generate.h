// The whole of `mugraph replay` short of running: plan the schedule for each requested
// target (plan/schedule_plan.h), print the plan as CUDA C++, compile it with NVRTC to PTX for
// each target and to a cubin for the first one, whose ptxas report gives each kernel's
// registers, spills and memory, and write the files with their manifest. One kernel.cu
// serves every requested target, so their plans must agree; a schedule whose plan differs
// between targets (shared memory, pipeline stages) is generated one target at a time.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/emit/kernel.h"
#include "codegen/ptxas_report.h"
#include "graph/ir.h"

namespace mugraph::codegen {

struct GenerateOptions {
  // Targets by compute capability * 10; the first one's cubin gives the resources.
  std::vector<int> archs = {90};
};

struct GeneratedCode {
  graph::Schedule schedule;  // with predefined ops lowered to block graphs
  EmittedSource emitted;
  std::map<std::string, std::string> ptx;                   // "sm_80" -> PTX text
  std::map<std::string, std::vector<std::string>> options;  // "sm_80" -> NVRTC options
  std::string resourceArch;                                 // the cubin's target: "sm_90"
  std::string cubin;
  std::vector<KernelResources> resources;  // of the cubin, launch order
  std::string nvrtcVersion;
};

std::string archName(int arch);  // 90 -> "sm_90"
// "sm_80,sm_90" -> {80, 90}; UserError for an architecture with no plan::Target.
std::vector<int> parseArchList(const std::string& text);
inline constexpr const char* kDefaultArchList = "sm_90";

GeneratedCode generateCode(const graph::Schedule& schedule, const GenerateOptions& options);

// Writes kernel.cu, <arch>.ptx, resources.json, schedule.json and manifest.json into `dir`
// (created if missing), each atomically. Returns the file names written.
std::vector<std::string> writeGeneratedCode(const GeneratedCode& code, const std::string& dir);

}  // namespace mugraph::codegen
