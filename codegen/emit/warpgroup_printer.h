// What the two warpgroup emitters (warpgroup_gemm.cpp, warpgroup_attention.cpp) print alike
// around the ring of plan/paths/warpgroup_ring.h: the aligned shared-memory base and the
// barriers, the copy thread's box loads, the consumers' waits and releases, wgmma shared-
// memory descriptors and the epilogue that stores the accumulators. Every number printed
// here is the ring's (its offsets, stages and Target::warpgroup limits), never retyped.
#pragma once

#include <string>
#include <vector>

#include "codegen/emit/context.h"
#include "plan/paths/warpgroup_ring.h"

namespace mugraph::codegen {

// The tile a block works on, per grid axis: blockIdx, or the persistent loop's tile.
inline const char* const kWarpgroupTile[graph::kGridAxes] = {"bx", "by", "bz"};

class WarpgroupPrinter {
 public:
  WarpgroupPrinter(const EmitContext& context, const plan::WarpgroupRing& ring, graph::DType dtype)
      : context_(context), out_(context.out), ring_(ring), dtype_(dtype) {}

  // `mg_smem` (the dynamic shared memory's base, aligned at run time to the swizzle period),
  // `ring` (the device template mg::Ring of codegen/device/sm90_ring.cuh over the plan's
  // barriers), `extraBarriers` after the ring's, and `warpgroup`, this thread's warpgroup.
  void declareRing(const std::vector<std::string>& extraBarriers) const;
  // Thread 0 prefetches the tensor maps and initializes the barriers (`full` and the extra
  // ones complete on the copy thread's arrival, `empty` on every consumer warp's); then the
  // block synchronizes.
  void initializeRing(const std::vector<std::string>& extraBarriers) const;
  void setmaxnreg(bool producer) const;
  // `consumer` (from `consumerIndex`), `lane` and `warp` within the warpgroup.
  void declareConsumerThread(const std::string& consumerIndex) const;

  // The copy thread: `stage`, the stage of ring iteration `counter`, once the consumers
  // released its previous use.
  void acquireStage(const std::string& counter, const std::string& stage = "s") const;
  // A consumer: `s`, the stage of ring iteration `counter`, once its copies landed.
  void waitStage(const std::string& counter) const;
  // A consumer warp is done with ring iteration `counter`'s stage, where `condition`.
  void releaseStage(const std::string& counter, const std::string& condition = "") const;
  // The barrier stage `stage`'s copies complete on.
  std::string fullBarrier(const std::string& stage) const;
  // The copy thread announces `bytes` of copies completing on `barrier`.
  void expectBytes(const std::string& barrier, int64_t bytes) const;
  // The copies of `op`'s boxes for `iteration`, box j at `prefix` + (firstOffset + j's bytes).
  void loadBoxes(const plan::BulkOperand& op, const std::string& prefix, int64_t firstOffset,
                 const std::string& barrier, const std::string& iteration) const;
  // Gathered operand `op` (BulkOperand::gatherChunkBytes): every copy-warpgroup thread issues
  // its cp.async chunks of the boxes for `iteration` into stage base `stage`, reading the
  // tensor at kernel parameter `pointer`, zero-filling chunks past the tensor's end and
  // placing each 16 bytes where the copy engine's swizzle would.
  void gatherBoxes(const plan::BulkOperand& op, const std::string& stage,
                   const std::string& iteration, const std::string& pointer) const;
  // The wgmma descriptor of operand `op` at 16-wide K step kk, for rows from `rows0` (A:
  // the m tile's first row; B: 0), in the operand's boxes at `base`.
  std::string descriptor(const plan::BulkOperand& op, const std::string& base, int64_t rows0,
                         int kk) const;
  // The address of stage `stage`'s first box.
  std::string stageBase(const std::string& stage) const;
  std::string wgmmaShape(int64_t n) const;  // "m64n128k16"
  std::string mapName(int map) const { return "mg_map" + std::to_string(map); }

  // Applies element-wise block ops `ops` (in order) to accumulators `acc` (laid out as
  // storeAccumulators reads them) of accumulator op `accumulatorOp` in place: each element's
  // value, with `inputs`' elements at its row and column read from global memory, becomes
  // that of the tile output op `outputOp` stores.
  void applyElementwiseOps(int accumulatorOp, const std::vector<int>& ops,
                           const std::vector<int>& inputs, int outputOp, const std::string& acc,
                           int mTiles, int64_t n, int64_t rowsPerConsumer) const;
  // Stores accumulators `acc` (an expression of the m tile t) of the consumers to output op
  // `outputOp`'s tensor: through the staging buffers where the ring
  // has them, else from registers in pairs. acc[4 * j + r] of m tile t is row
  // consumer * rowsPerConsumer + wgmmaRows t + 16 warp + lane / 4 + 8 (r / 2), column
  // 8 j + 2 (lane % 4) + r % 2 of the block's result.
  void storeAccumulators(int outputOp, const std::string& acc, int mTiles, int64_t n,
                         int64_t rowsPerConsumer) const;

 private:
  std::string coordinate(const plan::BulkOperand& op, int i, const std::string& iteration,
                         int box) const;
  int64_t elementBytes() const { return graph::dtypeBytes(dtype_); }
  std::string str(int64_t value) const { return std::to_string(value); }

  const EmitContext& context_;
  CudaWriter& out_;
  const plan::WarpgroupRing& ring_;
  graph::DType dtype_;
};

}  // namespace mugraph::codegen
