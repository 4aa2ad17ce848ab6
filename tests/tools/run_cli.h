// Runs the built `mugraph` binary as a user would and captures its exit code and output.
#pragma once

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace mugraph::testing {

struct CliResult {
  int exitCode = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

inline std::string readWholeFile(const std::string& path) {
  std::string text;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    std::array<char, 4096> buffer;
    size_t n;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), f)) > 0) text.append(buffer.data(), n);
    std::fclose(f);
  }
  return text;
}

// `args` is appended to the binary's path as shell text; callers quote file names.
// Where the binary and the sources are: the build's paths, unless the environment moves
// them (as on a GPU machine that runs binaries carried from here).
inline std::string mugraphBinary() {
  const char* moved = std::getenv("MUGRAPH_BINARY");
  return moved ? moved : MUGRAPH_BINARY;
}
inline std::string sourceDir() {
  const char* moved = std::getenv("MUGRAPH_SOURCE_DIR");
  return moved ? moved : MUGRAPH_SOURCE_DIR;
}

// `env` (e.g. "NAME=value") and `wrapper` (e.g. "timeout -s KILL 2") prefix the command.
inline CliResult runMugraph(const std::string& args, const std::string& scratchDir,
                            const std::string& env = "", const std::string& wrapper = "") {
  const std::string outPath = scratchDir + "/cli.out";
  const std::string errPath = scratchDir + "/cli.err";
  const std::string command =
      (env.empty() ? "" : "env " + env + " ") + (wrapper.empty() ? "" : wrapper + " ") +
      mugraphBinary() + " " + args + " >" + outPath + " 2>" + errPath;
  const int status = std::system(command.c_str());
  CliResult result;
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = readWholeFile(outPath);
  result.err = readWholeFile(errPath);
  return result;
}

}  // namespace mugraph::testing
