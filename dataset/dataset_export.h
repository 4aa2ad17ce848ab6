// `mugraph dataset export DIR --format F`: a dataset as JSON Lines for training language
// models on kernels, one record per line, in one of three shapes (dataset/README.md gives each
// field):
//   jsonl       ours, everything: per member the program (mugraph text and PyTorch), its
//               source (CUDA C++ or Triton), PTX, schedule, latency, class and evidence;
//               then per class every (slower, faster) pair of timed members
//   popcorn     {"input": a prompt with the PyTorch program, "output": the kernel source}
//   kernelbook  KernelBook's columns: the PyTorch module (python_code) beside the kernel
//               (triton_code or cuda_code)
// External members that failed on a GPU are left out; every record carries its evidence, so a
// reader can keep only GPU-checked or finite-field members.
#pragma once

#include <cstdint>
#include <string>

namespace mugraph::dataset {

enum class ExportFormat { Jsonl, Popcorn, KernelBook };

// UserError for an unknown name.
ExportFormat parseExportFormat(const std::string& name);

struct ExportSummary {
  int members = 0;
  int pairs = 0;    // jsonl only
  int records = 0;  // lines written
  int64_t bytes = 0;
};

ExportSummary exportDataset(const std::string& dir, ExportFormat format,
                            const std::string& outFile);

}  // namespace mugraph::dataset
