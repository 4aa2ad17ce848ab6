// What every fuzz target shares: the input as a file (the readers take paths, as the CLI
// calls them) and the one property each target checks. A reader given any bytes either
// accepts them or throws a UserError with a reason; anything else (another exception, a
// crash, a sanitizer report, a leak, a hang) is a bug that libFuzzer reports.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>

#include "graph/error.h"

namespace mugraph::fuzz {

// The input written to a file of this process, named with `suffix` (readers that decide by
// the extension, like .mg, see the right one). Rewritten for every input.
inline std::string writeInput(const uint8_t* data, size_t size, const std::string& suffix) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/mugraph-fuzz-" +
                           std::to_string(::getpid()) + suffix;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

// Runs `read`; returns whether it accepted the input. A UserError is a clear refusal, and
// its reason must say something; any other exception aborts (libFuzzer keeps the input).
template <typename Read>
bool acceptsOrRefuses(Read&& read) {
  try {
    read();
    return true;
  } catch (const UserError& e) {
    if (e.reason().empty()) {
      std::fprintf(stderr, "fuzz: a UserError without a reason (%s)\n", e.what());
      std::abort();
    }
    return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: not a UserError: %s\n", e.what());
    std::abort();
  }
}

// Aborts with `what` when a property of an accepted input does not hold.
inline void require(bool holds, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "fuzz: %s\n", what);
  std::abort();
}

}  // namespace mugraph::fuzz
