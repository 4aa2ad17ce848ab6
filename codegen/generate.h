// The whole of `mugraph replay` short of running: lower predefined ops, emit CUDA C++,
// compile it with NVRTC to PTX for each requested architecture and to an sm_90 cubin whose
// ptxas report gives each kernel's registers, spills and memory, and write the files with
// their manifest.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/emit_kernel.h"
#include "codegen/ptxas_report.h"
#include "graph/ir.h"

namespace mugraph::codegen {

inline constexpr int kResourceArch = 90;  // the cubin whose ptxas report is recorded

struct GenerateOptions {
  std::vector<int> archs = {80, 90};  // PTX targets (compute capability * 10)
};

struct GeneratedCode {
  graph::Schedule schedule;  // with predefined ops lowered to block graphs
  EmittedSource emitted;
  std::map<std::string, std::string> ptx;                   // "sm_80" -> PTX text
  std::map<std::string, std::vector<std::string>> options;  // "sm_80" -> NVRTC options
  std::string cubin;                                        // sm_90
  std::vector<KernelResources> resources;                   // sm_90, launch order
  std::string nvrtcVersion;
};

std::string archName(int arch);  // 90 -> "sm_90"
// "sm_80,sm_90" -> {80, 90}; UserError for anything else.
std::vector<int> parseArchList(const std::string& text);

GeneratedCode generateCode(const graph::Schedule& schedule, const GenerateOptions& options);

// Writes kernel.cu, <arch>.ptx, resources.json, schedule.json and manifest.json into `dir`
// (created if missing), each atomically. Returns the file names written.
std::vector<std::string> writeGeneratedCode(const GeneratedCode& code, const std::string& dir);

}  // namespace mugraph::codegen
