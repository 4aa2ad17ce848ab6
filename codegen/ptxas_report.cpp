// Parsing of ptxas -v output (see ptxas_report.h). The lines look like:
//   ptxas info    : Compiling entry function 'k' for 'sm_90'
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 12 registers, used 1 barriers, 1024 bytes smem
// and, before the entry's lines, advice that names it:
//   ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are
//                   serialized due to ... in the function 'k'
#include "codegen/ptxas_report.h"

#include <elf.h>

#include <cstring>
#include <map>

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

namespace {

// The ELF attribute records of a cubin's `.nv.info` sections: a format byte, an attribute byte,
// then either a 16-bit value (formats below kSizedValue) or a 16-bit size and that many bytes.
constexpr uint8_t kSizedValue = 4;        // EIFMT_SVAL
constexpr uint8_t kRegisterCount = 0x2f;  // EIATTR_REGCOUNT: symbol index, registers
constexpr uint8_t kFrameSize = 0x11;      // EIATTR_FRAME_SIZE: symbol index, bytes
constexpr uint8_t kBarriers = 0x4c;       // EIATTR_NUM_BARRIERS: the count, 16-bit

template <typename T>
bool readAt(const std::string& bytes, uint64_t offset, T& value) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return true;
}

}  // namespace

std::vector<KernelResources> cubinResources(const std::string& cubin) {
  std::vector<KernelResources> entries;
  Elf64_Ehdr header;
  if (!readAt(cubin, 0, header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64) {
    return entries;
  }
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (size_t i = 0; i < sections.size(); ++i) {
    if (!readAt(cubin, header.e_shoff + i * sizeof(Elf64_Shdr), sections[i])) return {};
  }
  const auto sectionName = [&](const Elf64_Shdr& section) -> std::string {
    if (header.e_shstrndx >= sections.size()) return "";
    const uint64_t at = sections[header.e_shstrndx].sh_offset + section.sh_name;
    if (at >= cubin.size()) return "";
    return std::string(cubin.c_str() + at);
  };
  // Function symbols by index (the records name them so) and by entry.
  std::map<uint32_t, std::string> symbolNames;
  for (const Elf64_Shdr& section : sections) {
    if (section.sh_type != SHT_SYMTAB || section.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strings = sections[section.sh_link];
    for (uint64_t i = 0; i * sizeof(Elf64_Sym) < section.sh_size; ++i) {
      Elf64_Sym symbol;
      if (!readAt(cubin, section.sh_offset + i * sizeof(Elf64_Sym), symbol)) break;
      if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC) continue;
      const uint64_t at = strings.sh_offset + symbol.st_name;
      if (at < cubin.size()) symbolNames[static_cast<uint32_t>(i)] = cubin.c_str() + at;
    }
  }
  std::map<std::string, KernelResources> byEntry;
  for (const auto& [index, name] : symbolNames) byEntry[name].entry = name;
  const std::string perEntryInfo = ".nv.info.";
  for (const Elf64_Shdr& section : sections) {
    const std::string name = sectionName(section);
    if (name != ".nv.info" && name.rfind(perEntryInfo, 0) != 0) continue;
    const std::string owner = name == ".nv.info" ? "" : name.substr(perEntryInfo.size());
    for (uint64_t at = section.sh_offset; at + 4 <= section.sh_offset + section.sh_size;) {
      uint8_t format = 0, attribute = 0;
      uint16_t value = 0;
      if (!readAt(cubin, at, format) || !readAt(cubin, at + 1, attribute) ||
          !readAt(cubin, at + 2, value)) {
        break;
      }
      if (format < kSizedValue) {
        if (attribute == kBarriers && byEntry.count(owner)) byEntry[owner].barriers = value;
        at += 4;
        continue;
      }
      uint32_t symbol = 0, number = 0;
      if (value == 8 && readAt(cubin, at + 4, symbol) && readAt(cubin, at + 8, number) &&
          symbolNames.count(symbol)) {
        KernelResources& entry = byEntry[symbolNames[symbol]];
        if (attribute == kRegisterCount) entry.registers = static_cast<int>(number);
        if (attribute == kFrameSize) entry.localBytes = number;
      }
      at += 4 + value;
    }
  }
  // Entries have a `.nv.info.<entry>` section (their parameters); device functions do not.
  std::set<std::string> withInfo;
  for (const Elf64_Shdr& section : sections) {
    const std::string name = sectionName(section);
    if (name.rfind(perEntryInfo, 0) == 0) withInfo.insert(name.substr(perEntryInfo.size()));
  }
  for (auto& [name, entry] : byEntry) {
    if (withInfo.count(name)) entries.push_back(entry);
  }
  return entries;
}

}  // namespace mugraph::codegen
