// Tensor roles, workspace offsets and kernel parameter lists (see kernel_abi.h).
#include "codegen/kernel_abi.h"

#include <algorithm>

#include "graph/error.h"

namespace mugraph::codegen {

const char* roleName(TensorRole role) {
  switch (role) {
    case TensorRole::Input:
      return "input";
    case TensorRole::Output:
      return "output";
    case TensorRole::Workspace:
      return "workspace";
  }
  return "?";
}

std::string sanitizeIdentifier(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool keep =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += keep ? c : '_';
  }
  return out.empty() ? "op" : out;
}

std::string dimParamName(const std::string& name) {
  return "dim_" + sanitizeIdentifier(name);
}

ScheduleAbi planAbi(const graph::KernelGraph& graph) {
  ScheduleAbi abi;
  abi.bindingOf.assign(graph.tensors.size(), -1);
  const auto bytesOf = [&](graph::TensorId t) {
    const graph::TensorDesc& desc = graph.tensors[t];
    return graph::elementCount(desc.shape) * graph::dtypeBytes(desc.dtype);
  };
  const auto bind = [&](graph::TensorId t, TensorRole role) {
    if (abi.bindingOf[t] >= 0) return;
    abi.bindingOf[t] = static_cast<int>(abi.tensors.size());
    abi.tensors.push_back(TensorBinding{t, role, bytesOf(t), -1});
  };
  for (graph::TensorId t : graph.inputs) bind(t, TensorRole::Input);
  for (graph::TensorId t : graph.outputs) bind(t, TensorRole::Output);
  for (const graph::KernelOp& op : graph.ops) {
    for (graph::TensorId t : op.outputs) {
      if (abi.bindingOf[t] >= 0) continue;
      bind(t, TensorRole::Workspace);
      TensorBinding& binding = abi.tensors.back();
      binding.offset = abi.workspaceBytes;
      abi.workspaceBytes +=
          (binding.bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
    }
  }
  for (size_t k = 0; k < graph.ops.size(); ++k) {
    const graph::KernelOp& op = graph.ops[k];
    if (op.kind != graph::OpKind::BlockGraph) {
      throw UserError(
          "kernel " + std::to_string(k) + " (" + std::string(graph::opName(op.kind)) + ")",
          "is a predefined op; lower it to a block graph before code generation");
    }
    KernelAbi kernel;
    kernel.kernelIndex = static_cast<int>(k);
    kernel.entry = "mugraph_k" + std::to_string(k) + "_" +
                   sanitizeIdentifier(op.name.empty() ? "kernel" : op.name);
    for (graph::TensorId t : op.outputs) {
      kernel.outputParams.push_back(static_cast<int>(kernel.params.size()));
      kernel.params.push_back(KernelParam{t, true});
    }
    for (graph::TensorId t : op.inputs) {
      kernel.inputParams.push_back(static_cast<int>(kernel.params.size()));
      kernel.params.push_back(KernelParam{t, false});
    }
    abi.kernels.push_back(std::move(kernel));
  }
  return abi;
}

}  // namespace mugraph::codegen
