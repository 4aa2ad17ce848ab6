// The standalone ABI of generated code: which device tensors a client allocates (program
// inputs and outputs) and which live in one client-allocated workspace (every other tensor,
// each at a 256-byte aligned offset), and each kernel's parameter list: pointers to the
// tensors it writes (its outputs, in order), then to those it reads (its inputs, in order),
// each to element 0 of the tensor's storage. See codegen/README.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace mugraph::codegen {

enum class TensorRole { Input, Output, Workspace };
const char* roleName(TensorRole role);  // "input", "output", "workspace"

inline constexpr int64_t kWorkspaceAlignment = 256;

struct TensorBinding {
  graph::TensorId tensor = -1;
  TensorRole role = TensorRole::Input;
  int64_t bytes = 0;
  int64_t offset = -1;  // in the workspace; -1 for inputs and outputs
};

struct KernelParam {
  graph::TensorId tensor = -1;
  bool written = false;
};

struct KernelAbi {
  int kernelIndex = -1;  // in the kernel graph
  std::string entry;     // mugraph_k<index>_<name>
  std::vector<KernelParam> params;
  std::vector<int> outputParams;  // per kernel output: its parameter index
  std::vector<int> inputParams;   // per kernel input: its parameter index
};

struct ScheduleAbi {
  std::vector<TensorBinding> tensors;  // inputs, outputs, then workspace tensors
  std::vector<int> bindingOf;          // per kernel-graph tensor: index into `tensors`
  int64_t workspaceBytes = 0;
  std::vector<KernelAbi> kernels;  // launch order
};

// `graph` must hold block graphs only (see plan/lower_predefined_ops.h).
ScheduleAbi planAbi(const graph::KernelGraph& graph);

// A C identifier from any name: letters, digits and '_' kept, everything else '_'.
std::string sanitizeIdentifier(const std::string& name);

// The kernel parameter holding dynamic dim `name`'s length: `int dim_<name>`. Every kernel of
// a schedule with dynamic dims takes one per dim, in declaration order, after its pointers and
// tensor maps.
std::string dimParamName(const std::string& name);

}  // namespace mugraph::codegen
