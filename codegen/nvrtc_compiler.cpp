// NVRTC driver (see nvrtc_compiler.h).
#include "codegen/nvrtc_compiler.h"

#include <nvrtc.h>

#include <memory>
#include <regex>
#include <sstream>

#include "codegen/device_header.h"

namespace mugraph::codegen {
namespace {

inline constexpr const char* kSourceName = "kernel.cu";

struct ProgramDeleter {
  void operator()(nvrtcProgram* program) const {
    nvrtcDestroyProgram(program);
    delete program;
  }
};

void check(nvrtcResult result, const std::string& what) {
  if (result != NVRTC_SUCCESS) {
    throw std::runtime_error(what + ": " + nvrtcGetErrorString(result));
  }
}

// The entry whose definition precedes line `line` of `source` (1-based).
std::string entryAtLine(const std::string& source, int line) {
  std::istringstream lines(source);
  std::string text;
  std::string entry;
  const std::regex entryPattern("__global__ void .*(mugraph_k[0-9]+_[A-Za-z0-9_]+)\\(");
  for (int n = 1; n <= line && std::getline(lines, text); ++n) {
    std::smatch match;
    if (std::regex_search(text, match, entryPattern)) entry = match[1];
  }
  return entry;
}

std::string firstErrorEntry(const std::string& source, const std::string& log) {
  std::smatch match;
  if (std::regex_search(log, match, std::regex(std::string(kSourceName) + "\\((\\d+)\\): error"))) {
    return entryAtLine(source, std::stoi(match[1]));
  }
  return "";
}

}  // namespace

std::string nvrtcVersionText() {
  int major = 0;
  int minor = 0;
  check(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> baseNvrtcOptions() {
  return {"-std=c++17", "-default-device", "--fmad=true"};
}

NvrtcOutput compileWithNvrtc(const std::string& source, const std::string& scheduleName, int arch,
                             bool cubin, bool archSpecific) {
  std::vector<const char*> headers;
  std::vector<const char*> headerNames;
  for (const DeviceHeader& header : deviceHeaders()) {
    headers.push_back(header.source.data());
    headerNames.push_back(header.name.data());
  }
  std::unique_ptr<nvrtcProgram, ProgramDeleter> program(new nvrtcProgram{});
  check(nvrtcCreateProgram(program.get(), source.c_str(), kSourceName,
                           static_cast<int>(headers.size()), headers.data(), headerNames.data()),
        "nvrtcCreateProgram");
  NvrtcOutput output;
  output.options = baseNvrtcOptions();
  output.options.push_back("--gpu-architecture=" + std::string(cubin ? "sm_" : "compute_") +
                           std::to_string(arch) + (archSpecific ? "a" : ""));
  if (cubin) output.options.push_back("--ptxas-options=-v");
  std::vector<const char*> options;
  for (const std::string& option : output.options) options.push_back(option.c_str());
  const nvrtcResult compiled =
      nvrtcCompileProgram(*program, static_cast<int>(options.size()), options.data());
  size_t size = 0;
  check(nvrtcGetProgramLogSize(*program, &size), "nvrtcGetProgramLogSize");
  output.log.assign(size, '\0');
  check(nvrtcGetProgramLog(*program, output.log.data()), "nvrtcGetProgramLog");
  while (!output.log.empty() && output.log.back() == '\0') output.log.pop_back();
  if (compiled != NVRTC_SUCCESS) {
    throw CompileError(scheduleName, firstErrorEntry(source, output.log), output.log);
  }
  check(nvrtcGetPTXSize(*program, &size), "nvrtcGetPTXSize");
  output.ptx.assign(size, '\0');
  check(nvrtcGetPTX(*program, output.ptx.data()), "nvrtcGetPTX");
  while (!output.ptx.empty() && output.ptx.back() == '\0') output.ptx.pop_back();
  if (cubin) {
    check(nvrtcGetCUBINSize(*program, &size), "nvrtcGetCUBINSize");
    output.cubin.assign(size, '\0');
    check(nvrtcGetCUBIN(*program, output.cubin.data()), "nvrtcGetCUBIN");
  }
  return output;
}

}  // namespace mugraph::codegen
