#include "search/builtin_programs.h"

#include <filesystem>

#include "graph/error.h"
#include "graph/files.h"
#include "graph/program_text.h"
#include "search/builtin_program_texts.h"

namespace mugraph::search {

const std::vector<BuiltinProgram>& builtinPrograms() {
  static const std::vector<BuiltinProgram> programs = {
      {"gqa", "gqa.mg",
       "GQA, safe softmax, Mirage's shape: Q [2,256,64], K [2,64,4096], V [2,4096,64]"},
      {"gqa_mirage", "gqa_mirage.mg", "Mirage's own GQA program (no max-subtraction), same shape"},
      {"gemm", "gemm_1024.mg", "C = A·B, 1024³ f16"},
      {"rmsnorm_matmul", "rmsnorm_matmul.mg", "Y = rms_norm(X [16,4096]) · W [4096,6144]"},
      {"gqa_decode", "gqa_decode.mg",
       "GQA decode, safe softmax: 32 q heads, 8 kv heads, d 128, 4K context"},
  };
  return programs;
}

std::optional<graph::Program> builtinProgram(const std::string& name) {
  for (const BuiltinProgram& program : builtinPrograms()) {
    if (program.name != name) continue;
    for (const EmbeddedProgramText& text : kEmbeddedProgramTexts) {
      if (program.file == text.file) {
        return graph::parseProgramText(text.text, "schedules/" + program.file);
      }
    }
  }
  return std::nullopt;
}

graph::Program loadProgramOrBuiltin(const std::string& nameOrPath) {
  if (std::optional<graph::Program> builtin = builtinProgram(nameOrPath)) return *builtin;
  if (!std::filesystem::exists(nameOrPath)) {
    std::string names;
    for (const BuiltinProgram& program : builtinPrograms()) names += " " + program.name;
    throw UserError(nameOrPath,
                    "no such file, and not a built-in program (built-ins:" + names + ")");
  }
  return graph::loadProgram(nameOrPath);
}

}  // namespace mugraph::search
