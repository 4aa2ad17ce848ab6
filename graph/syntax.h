// Which names and ops the file formats accept. Tensor and tile names are identifiers so that
// every program prints as .mg text; program, schedule and kernel names may also hold '.' and
// '-'. Programs hold predefined ops only: kernel-level compute ops, no I/O, no block graphs.
#pragma once

#include <cstdint>
#include <string_view>

#include "graph/ops.h"

namespace mugraph::graph {

// Larger dims are surely typos, and keeping them small keeps element counts far from overflow.
inline constexpr int64_t kMaxDimSize = (int64_t{1} << 31) - 1;

inline bool isIdentifierStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool isIdentifierChar(char c) {
  return isIdentifierStart(c) || (c >= '0' && c <= '9');
}

// [A-Za-z_][A-Za-z0-9_]*
inline bool isTensorName(std::string_view name) {
  if (name.empty() || !isIdentifierStart(name[0])) return false;
  for (char c : name) {
    if (!isIdentifierChar(c)) return false;
  }
  return true;
}

// [A-Za-z0-9_.-]*, possibly empty
inline bool isGraphName(std::string_view name) {
  for (char c : name) {
    if (!isIdentifierChar(c) && c != '.' && c != '-') return false;
  }
  return true;
}

inline bool isPredefinedOp(OpKind kind) {
  const OpInfo& info = opInfo(kind);
  return info.kernelLevel && info.opClass != OpClass::Io && info.opClass != OpClass::BlockGraph;
}

}  // namespace mugraph::graph
