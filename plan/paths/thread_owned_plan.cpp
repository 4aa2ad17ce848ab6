// Planning the thread-owned path (see thread_owned_plan.h).
#include "plan/paths/thread_owned_plan.h"

#include <algorithm>

#include "plan/kernel_plan.h"

namespace mugraph::plan {
namespace {

using graph::OpKind;

// Most elements one thread owns: each is a register per tile kept across the loop.
constexpr int kMaxOwnedPerThread = 8;

}  // namespace

std::optional<ThreadOwnedPlan> planThreadOwned(const KernelPlan& plan) {
  const graph::BlockGraph& block = *plan.block;
  ThreadOwnedPlan owned;
  for (const graph::BlockOp& op : block.ops) {
    const bool fits = op.kind == OpKind::Input || op.kind == OpKind::Output ||
                      graph::isElementwise(op.kind) || graph::isAccumulator(op.kind);
    if (!fits) return std::nullopt;
  }
  for (const graph::BlockTensor& tile : block.tensors) {
    const Extent4 extent = padTo4(tile.shape);
    for (int d = 0; d < graph::kMaxRank; ++d)
      owned.extent[d] = std::max(owned.extent[d], extent[d]);
  }
  for (const graph::BlockTensor& tile : block.tensors) {
    const Extent4 extent = padTo4(tile.shape);
    for (int d = 0; d < graph::kMaxRank; ++d) {
      if (extent[d] != 1 && extent[d] != owned.extent[d]) return std::nullopt;
    }
  }
  owned.elements = owned.extent[0] * owned.extent[1] * owned.extent[2] * owned.extent[3];
  const int64_t perThread = (owned.elements + block.threads - 1) / block.threads;
  if (perThread > kMaxOwnedPerThread) return std::nullopt;
  owned.perThread = static_cast<int>(perThread);
  return owned;
}

}  // namespace mugraph::plan
