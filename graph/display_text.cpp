#include "graph/display_text.h"

#include <cstdint>

namespace mugraph::graph {
namespace {

// The length of the valid UTF-8 sequence starting at text[i], or 0 if none starts there.
size_t utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint8_t low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

bool isControl(char c) {
  const auto u = static_cast<uint8_t>(c);
  return u < 0x20 || u == 0x7F;
}

}  // namespace

bool isValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t length = utf8SequenceLength(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

bool isWritableName(std::string_view text) {
  for (char c : text) {
    if (isControl(c)) return false;
  }
  return isValidUtf8(text);
}

std::string escapeForDisplay(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t length = utf8SequenceLength(text, i);
    const char c = text[i];
    if (length > 1 || (length == 1 && (!isControl(c) || c == '\n'))) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    const auto u = static_cast<uint8_t>(c);
    out += "\\x";
    out += kHex[u >> 4];
    out += kHex[u & 0xF];
    ++i;
  }
  return out;
}

}  // namespace mugraph::graph
