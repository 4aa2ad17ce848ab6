#include "graph/ir.h"

namespace mugraph::graph {

const char* gridAxisName(int axis) {
  static const char* const kNames[kGridAxes] = {"x", "y", "z"};
  return axis >= 0 && axis < kGridAxes ? kNames[axis] : "?";
}

std::optional<TensorId> KernelGraph::findTensor(const std::string& tensorName) const {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == tensorName) return static_cast<TensorId>(i);
  }
  return std::nullopt;
}

bool KernelGraph::isProgram() const {
  for (const KernelOp& op : ops) {
    if (op.kind == OpKind::BlockGraph) return false;
  }
  return true;
}

}  // namespace mugraph::graph
