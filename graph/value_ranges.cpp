#include "graph/value_ranges.h"

#include <algorithm>

namespace mugraph::graph {

std::vector<bool> nonnegativeTensors(const KernelGraph& program) {
  std::vector<bool> result(program.tensors.size(), false);
  for (const KernelOp& op : program.ops) {
    bool all = !op.inputs.empty();
    for (TensorId t : op.inputs) all = all && result[t];
    bool value = false;
    switch (op.kind) {
      case OpKind::Square:
      case OpKind::Exp:
      case OpKind::Sqrt:
      case OpKind::Sigmoid:
      case OpKind::Relu:
        value = true;
        break;
      case OpKind::Scale:
      case OpKind::AddScalar:
        value = all && op.attrs.scale >= 0;
        break;
      case OpKind::ReduceSum:
      case OpKind::ReduceMax:
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Div:
      case OpKind::Matmul:
        value = all;
        break;
      default:
        break;
    }
    for (TensorId t : op.outputs) result[t] = value;
  }
  return result;
}

std::vector<bool> squaredRangeTensors(const KernelGraph& program) {
  std::vector<bool> result(program.tensors.size(), false);
  for (const KernelOp& op : program.ops) {
    const bool any = std::any_of(op.inputs.begin(), op.inputs.end(),
                                 [&](TensorId t) { return result[t]; });
    bool value = false;
    switch (op.kind) {
      case OpKind::Square:
        value = true;
        break;
      case OpKind::Sqrt:
      case OpKind::RmsNorm:
      case OpKind::Sigmoid:
      case OpKind::Tanh:
      case OpKind::Erf:
      case OpKind::Exp:
        value = false;
        break;
      case OpKind::Div:  // a square over anything but another one; x / √(Σx²) is back in range
        value = result[op.inputs.at(0)] && !result[op.inputs.at(1)];
        break;
      default:
        value = any;
        break;
    }
    for (TensorId t : op.outputs) result[t] = value;
  }
  return result;
}

}  // namespace mugraph::graph
