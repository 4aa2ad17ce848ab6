// Compiles generated CUDA C++ with NVRTC (no GPU needed): PTX for compute_XX, or a cubin for
// sm_XX together with its PTX and the ptxas resource log. The device header is handed to
// NVRTC from memory. Compile errors are CompileErrors carrying the schedule, the kernel entry
// the first error points into, and the whole NVRTC log; nothing is swallowed.
#pragma once

#include <string>
#include <vector>

#include "graph/error.h"

namespace mugraph::codegen {

class CompileError : public UserError {
 public:
  CompileError(std::string schedule, std::string entry, std::string log)
      : UserError("schedule '" + schedule + "'" + (entry.empty() ? "" : " kernel " + entry),
                  "NVRTC failed to compile the generated code:\n" + log),
        schedule_(std::move(schedule)),
        entry_(std::move(entry)),
        log_(std::move(log)) {}
  const std::string& schedule() const { return schedule_; }
  const std::string& entry() const { return entry_; }
  const std::string& log() const { return log_; }

 private:
  std::string schedule_;
  std::string entry_;
  std::string log_;
};

struct NvrtcOutput {
  std::string ptx;
  std::string cubin;  // empty for a PTX-only compile
  std::string log;    // NVRTC log (the ptxas report for a cubin compile)
  std::vector<std::string> options;
};

// "13.0"
std::string nvrtcVersionText();

// The options every compile uses (besides the architecture).
std::vector<std::string> baseNvrtcOptions();

// arch is a number like 80 or 90. With `cubin`, compiles for sm_<arch> (PTX is the same
// PTX a compute_<arch> compile gives) and runs ptxas -v; else compiles compute_<arch> PTX.
// `archSpecific` targets sm_<arch>a / compute_<arch>a instead (wgmma, setmaxnreg).
NvrtcOutput compileWithNvrtc(const std::string& source, const std::string& scheduleName, int arch,
                             bool cubin, bool archSpecific = false);

}  // namespace mugraph::codegen
