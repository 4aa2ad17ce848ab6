// Text that came from a file (a model's node and value names, a JSON string, a line of a
// program) is data, not trusted text: it may hold bytes that are not UTF-8 or that a terminal
// acts on. Before such text is written into JSON, a file name or a message, it is checked
// here (isWritableName) or escaped (escapeForDisplay). One definition of both, so every
// reader and writer agrees on what is writable.
#pragma once

#include <string>
#include <string_view>

namespace mugraph::graph {

// Whether `text` is valid UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
bool isValidUtf8(std::string_view text);

// Valid UTF-8 without control characters (U+0000 to U+001F, U+007F): safe in JSON, a log
// line and a message.
bool isWritableName(std::string_view text);

// `text` with every byte of an invalid UTF-8 sequence and every control character but the
// line feed written as \xNN, so the result is printable UTF-8 that names each original byte.
std::string escapeForDisplay(std::string_view text);

}  // namespace mugraph::graph
