// Planning the row-owned path (see row_owned_plan.h).
#include "plan/paths/row_owned_plan.h"

#include <algorithm>

#include "plan/kernel_plan.h"

namespace mugraph::plan {
namespace {

using graph::OpKind;

constexpr int kWarpSize = 32;
// Most elements of a row one lane keeps: a row of 2048 (a hidden size) in 64 registers per
// live tile. Longer rows take the general path.
constexpr int kMaxPerLane = 64;
constexpr int kWidestChunkBytes = 16;
// Elements per lane a warp keeps in flight across the rows it unrolls: 16 registers per live
// tile, about what one row of 512 holds.
constexpr int kElementsInFlight = 16;
// Most rows one warp takes one after another. Its rows' latencies add up, where the general
// path loads the block's whole tile at once: with more, a small grid runs faster there (a
// GQA output division of 8 blocks, 16 rows a warp, was ranked 8 us slower row-owned).
constexpr int64_t kMaxRowsPerWarp = 8;

// Whether op `op` runs on the path: element-wise ops but causal_mask (which needs the tile's
// position in the tensor), and the row ops along the last dim of their operand.
bool runsOnRows(const graph::BlockGraph& block, const graph::BlockOp& op) {
  if (op.kind == OpKind::Input || op.kind == OpKind::Output) return true;
  if (op.kind == OpKind::CausalMask) return false;
  if (graph::isElementwise(op.kind)) return true;
  const bool rowOp = op.kind == OpKind::ReduceSum || op.kind == OpKind::ReduceMax ||
                     op.kind == OpKind::RmsNorm || graph::isRotation(op.kind);
  if (!rowOp) return false;
  const int rank = static_cast<int>(block.tensors[op.inputs[0]].shape.size());
  if (op.attrs.dim != rank - 1) return false;
  return op.kind != OpKind::ReduceSum || op.attrs.to == 1;
}

}  // namespace

std::optional<RowOwnedPlan> planRowOwned(const KernelPlan& plan) {
  const graph::BlockGraph& block = *plan.block;
  if (block.forloop != 1 || block.threads % kWarpSize != 0) return std::nullopt;
  bool rotatesHalves = false;
  bool rotatesPairs = false;
  for (const graph::BlockOp& op : block.ops) {
    if (!runsOnRows(block, op)) return std::nullopt;
    rotatesHalves = rotatesHalves || op.kind == OpKind::RotateHalf;
    rotatesPairs = rotatesPairs || op.kind == OpKind::RotatePairs;
  }
  RowOwnedPlan rows;
  for (const graph::BlockTensor& tile : block.tensors) {
    const Extent4 extent = padTo4(tile.shape);
    for (int d = 0; d < graph::kMaxRank; ++d) rows.extent[d] = std::max(rows.extent[d], extent[d]);
  }
  const int64_t length = rows.extent[3];
  for (const graph::BlockTensor& tile : block.tensors) {
    const int64_t extent = padTo4(tile.shape)[3];
    if (extent != 1 && extent != length) return std::nullopt;
  }
  if (length % kWarpSize != 0 || length / kWarpSize > kMaxPerLane) return std::nullopt;
  rows.perLane = static_cast<int>(length / kWarpSize);
  rows.rows = rows.extent[0] * rows.extent[1] * rows.extent[2];
  rows.warps = block.threads / kWarpSize;
  if (rows.rowsPerWarp() > kMaxRowsPerWarp) return std::nullopt;

  // The widest chunk every full row keeps aligned; a transposed input's rows are strided.
  int chunkBytes = kWidestChunkBytes;
  int elementBytes = 1;
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (op.kind != OpKind::Input && op.kind != OpKind::Output) continue;
    const graph::TensorId tile = op.kind == OpKind::Input ? op.output : op.inputs[0];
    if (padTo4(block.tensors[tile].shape)[3] == 1) continue;
    const graph::TensorId tensor = op.kind == OpKind::Input ? plan.kernel->inputs[op.kernelTensor]
                                                            : plan.kernel->outputs[op.kernelTensor];
    const graph::TensorDesc& desc = plan.graph->tensors[tensor];
    if (op.kind == OpKind::Input && desc.layout == graph::Layout::Transposed) return std::nullopt;
    chunkBytes = std::min(chunkBytes, op.kind == OpKind::Input ? plan.inputs[o]->chunkBytes
                                                               : plan.outputs[o]->chunkBytes);
    elementBytes = std::max(elementBytes, static_cast<int>(graph::dtypeBytes(desc.dtype)));
  }
  rows.vector = std::max(1, chunkBytes / elementBytes);
  const auto splits = [&](int vector) {
    const int chunks = rows.perLane / vector;
    return rows.perLane % vector == 0 && (!rotatesHalves || chunks % 2 == 0) &&
           (!rotatesPairs || vector % 2 == 0);
  };
  while (rows.vector > 1 && !splits(rows.vector)) rows.vector /= 2;
  if (!splits(rows.vector)) return std::nullopt;
  rows.rowsInFlight = static_cast<int>(
      std::min<int64_t>(rows.rowsPerWarp(), std::max(1, kElementsInFlight / rows.perLane)));
  return rows;
}

}  // namespace mugraph::plan
