// The replay pipeline without a GPU (see generate.h).
#include "codegen/generate.h"

#include <filesystem>
#include <sstream>

#include "codegen/lower_predefined_ops.h"
#include "codegen/manifest.h"
#include "codegen/nvrtc_compiler.h"
#include "graph/error.h"
#include "graph/files.h"

namespace mugraph::codegen {

std::string archName(int arch) {
  return "sm_" + std::to_string(arch);
}

std::vector<int> parseArchList(const std::string& text) {
  std::vector<int> archs;
  std::istringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item == "sm_80") {
      archs.push_back(80);
    } else if (item == "sm_90") {
      archs.push_back(90);
    } else {
      throw UserError("--arch",
                      "unknown architecture '" + item + "' (sm_80 and sm_90 are supported)");
    }
  }
  if (archs.empty()) throw UserError("--arch", "names no architecture");
  return archs;
}

GeneratedCode generateCode(const graph::Schedule& schedule, const GenerateOptions& options) {
  GeneratedCode code;
  code.schedule = lowerPredefinedOps(schedule);
  code.emitted = emitSchedule(code.schedule);
  code.nvrtcVersion = nvrtcVersionText();
  const NvrtcOutput assembled =
      compileWithNvrtc(code.emitted.source, code.schedule.name, kResourceArch, true);
  code.cubin = assembled.cubin;
  const std::vector<KernelResources> reported = parsePtxasReport(assembled.log);
  for (const EmittedKernel& kernel : code.emitted.kernels) {
    KernelResources resources;
    resources.entry = kernel.entry;
    for (const KernelResources& r : reported) {
      if (r.entry == kernel.entry) resources = r;
    }
    code.resources.push_back(resources);
  }
  for (int arch : options.archs) {
    const std::string name = archName(arch);
    if (code.ptx.count(name)) continue;
    if (arch == kResourceArch) {
      code.ptx[name] = assembled.ptx;
      code.options[name] = assembled.options;
      continue;
    }
    const NvrtcOutput compiled =
        compileWithNvrtc(code.emitted.source, code.schedule.name, arch, false);
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
