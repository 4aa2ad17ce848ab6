#include "graph/resources.h"

#include <set>

namespace mugraph::graph {

int64_t sharedMemoryBytes(const BlockGraph& block) {
  std::set<TensorId> inRegisters;
  for (const FusionGroup& group : block.fusion)
    inRegisters.insert(group.fused.begin(), group.fused.end());
  int64_t bytes = 0;
  for (const BlockOp& op : block.ops) {
    if (op.output < 0 || inRegisters.count(op.output)) continue;
    const BlockTensor& tile = block.tensors[op.output];
    const OpClass c = opInfo(op.kind).opClass;
    const bool wide = c == OpClass::Matmul || c == OpClass::Reduction || c == OpClass::Accumulator;
    const int64_t elementBytes = wide ? 4 : dtypeBytes(tile.dtype);
    const int64_t buffers = op.kind == OpKind::Input && block.forloop > 1 ? 2 : 1;
    bytes += elementCount(tile.shape) * elementBytes * buffers;
  }
  return bytes;
}

int64_t gridBlocks(const BlockGraph& block) {
  return block.grid[0] * block.grid[1] * block.grid[2];
}

}  // namespace mugraph::graph
