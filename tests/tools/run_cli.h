// Runs the built `mugraph` binary as a user would and captures its exit code and output.
#pragma once

#include <sys/wait.h>
#include <array>
#include <cstdio>
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
// `env` (e.g. "NAME=value") and `wrapper` (e.g. "timeout -s KILL 2") prefix the command.
inline CliResult runMugraph(const std::string& args, const std::string& scratchDir,
                            const std::string& env = "", const std::string& wrapper = "") {
  const std::string outPath = scratchDir + "/cli.out";
  const std::string errPath = scratchDir + "/cli.err";
  const std::string command =
      (env.empty() ? "" : "env " + env + " ") + (wrapper.empty() ? "" : wrapper + " ") +
      std::string(MUGRAPH_BINARY) + " " + args + " >" + outPath + " 2>" + errPath;
  const int status = std::system(command.c_str());
  CliResult result;
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = readWholeFile(outPath);
  result.err = readWholeFile(errPath);
  return result;
}

}  // namespace mugraph::testing
