// The programs `mugraph superoptimize` knows by name. Each is defined once, as a .mg file in
// schedules/ (gqa_mirage.mg, gemm_1024.mg, rmsnorm_matmul.mg, gqa_decode.mg); the build embeds
// those files' text and this parses it with graph::parseProgramText.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace mugraph::search {

struct BuiltinProgram {
  std::string name;  // "gqa", "gemm", "rmsnorm_matmul", "gqa_decode"
  std::string file;  // its file under schedules/
  std::string summary;
};

const std::vector<BuiltinProgram>& builtinPrograms();
std::optional<graph::Program> builtinProgram(const std::string& name);

// A built-in name, else a program or schedule file (its program). UserError if neither.
graph::Program loadProgramOrBuiltin(const std::string& nameOrPath);

}  // namespace mugraph::search
