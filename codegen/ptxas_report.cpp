// Parsing of ptxas -v output (see ptxas_report.h). The lines look like:
//   ptxas info    : Compiling entry function 'k' for 'sm_90'
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 12 registers, used 1 barriers, 1024 bytes smem
// and, before the entry's lines, advice that names it:
//   ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are
//                   serialized due to ... in the function 'k'
#include "codegen/ptxas_report.h"

#include <regex>
#include <set>
#include <sstream>

namespace mugraph::codegen {
namespace {

int64_t numberBefore(const std::string& line, const std::string& unit) {
  const std::regex pattern("(\\d+) " + unit);
  std::smatch match;
  if (!std::regex_search(line, match, pattern)) return -1;
  return std::stoll(match[1]);
}

}  // namespace

std::vector<KernelResources> parsePtxasReport(const std::string& log) {
  std::vector<KernelResources> entries;
  const std::regex entryPattern("Compiling entry function '([^']+)'");
  const std::regex serializedPattern(
      "wgmma\\.mma_async instructions are serialized.*function '([^']+)'");
  std::set<std::string> serialized;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch match;
    if (std::regex_search(line, match, serializedPattern)) {
      serialized.insert(match[1]);
      continue;
    }
    if (std::regex_search(line, match, entryPattern)) {
      entries.push_back(KernelResources{match[1], 0, 0, 0, 0, 0, 0});
      continue;
    }
    if (entries.empty()) continue;
    KernelResources& current = entries.back();
    if (line.find("stack frame") != std::string::npos) {
      current.localBytes =
          std::max<int64_t>(current.localBytes, numberBefore(line, "bytes stack frame"));
      current.spillStoreBytes = std::max<int64_t>(0, numberBefore(line, "bytes spill stores"));
      current.spillLoadBytes = std::max<int64_t>(0, numberBefore(line, "bytes spill loads"));
    } else if (line.find("Used ") != std::string::npos) {
      current.registers = static_cast<int>(std::max<int64_t>(0, numberBefore(line, "registers")));
      current.barriers = static_cast<int>(std::max<int64_t>(0, numberBefore(line, "barriers")));
      current.staticSharedBytes = std::max<int64_t>(0, numberBefore(line, "bytes smem"));
      current.localBytes = std::max<int64_t>(current.localBytes, numberBefore(line, "bytes lmem"));
    }
  }
  for (KernelResources& entry : entries) entry.wgmmaSerialized = serialized.count(entry.entry) > 0;
  return entries;
}

}  // namespace mugraph::codegen
