// The µgraph IR: kernel graphs of device tensors, block graphs (what one thread block does)
// and the thread-graph fusion record. Small value types; tensors and ops refer to each other
// by index, so graphs copy, compare and serialize without pointer chasing.
//
// Block-graph semantics (the one definition; see verify/interpreter.h):
//  - input(T, imap, fmap): for grid axis a with grid[a] > 1, imap[a] is a dim of T split into
//    grid[a] parts (block b_a takes part b_a) or -1 (replicated). fmap is a dim split
//    further into `forloop` parts (iteration i takes part i) or -1 (same tile every iteration).
//    Parts need not divide: the last one is partial and elements past the end do not exist
//    (graph/tile_splits.h has the arithmetic, and the declared tile of BlockOp::tile).
//  - ops before an accumulator run once per iteration; accum_* combines iterations; ops after
//    it run once per block.
//  - accum_max(x) is a running max: per-iteration ops that read it see m_i, the max over
//    iterations 0..i; ops after the loop see the final max. accum_rescaled_sum(x, m), with m
//    an accum_max tile (broadcast over x), accumulates acc_0 = x_0 and
//    acc_i = acc_{i-1}·exp(m_{i-1} − m_i) + x_i, the online-softmax sum whose x_i was computed
//    with m_i; the same rule combines split partials that each carry their max.
//  - output(t, omap): every grid axis with grid[a] > 1 maps to a distinct dim of the output;
//    block b writes its tile at offset b_a * tile along that dim, after the loop, up to the
//    end of the device dim.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "graph/types.h"

namespace mugraph::graph {

using TensorId = int;
inline constexpr int kGridAxes = 3;  // x, y, z
inline constexpr int kReplicated = -1;
using AxisMap = std::array<int, kGridAxes>;  // per grid axis: a tensor dim, or kReplicated
const char* gridAxisName(int axis);          // "x", "y", "z"

struct BlockTensor {
  std::string name;
  DType dtype = DType::F32;
  Dims shape;  // tile shape

  bool operator==(const BlockTensor&) const = default;
};

struct BlockOp {
  OpKind kind = OpKind::Input;
  std::vector<TensorId> inputs;  // block tensors (empty for Input)
  TensorId output = -1;          // block tensor produced (-1 for Output)
  OpAttrs attrs;
  // Input: position in the enclosing kernel op's inputs; Output: position in its outputs.
  int kernelTensor = -1;
  AxisMap imap{kReplicated, kReplicated, kReplicated};  // Input only
  int fmap = kReplicated;                               // Input only
  // Input only: the declared tile when a split does not divide (graph/tile_splits.h); empty:
  // each split dim's tile is ⌈n/parts⌉.
  Dims tile;
  AxisMap omap{kReplicated, kReplicated, kReplicated};  // Output only

  bool operator==(const BlockOp&) const = default;
};

// Thread graph: element-wise ops fused into the register epilogue of the op producing their
// input. Recorded (not re-derived) so that a schedule fully determines the generated code.
struct FusionGroup {
  TensorId producer = -1;         // block tensor whose producing op hosts the epilogue
  std::vector<TensorId> fused;    // element-wise results computed in registers, in order

  bool operator==(const FusionGroup&) const = default;
};

struct BlockGraph {
  std::array<int64_t, kGridAxes> grid{1, 1, 1};
  // Thread-block clusters (sm_90): blocks launched together, `cluster[a]` consecutive blocks
  // along each grid axis, whose copies of a tile they all read may be multicast to all of
  // them. A launch choice only: it does not change what the block graph computes.
  std::array<int64_t, kGridAxes> cluster{1, 1, 1};
  int threads = 128;
  // Blocks of this kernel one multiprocessor runs at once (its occupancy): the plan gives each
  // block that share of the multiprocessor's shared memory and registers, and a persistent
  // kernel launches that many blocks per multiprocessor, so one block's copies, epilogue or
  // tail run under another's multiplies. A launch choice only, like `cluster`.
  int occupancy = 1;
  int64_t forloop = 1;
  std::vector<BlockTensor> tensors;
  std::vector<BlockOp> ops;  // definition before use
  std::vector<FusionGroup> fusion;

  int64_t blocks() const { return grid[0] * grid[1] * grid[2]; }
  int64_t clusterBlocks() const { return cluster[0] * cluster[1] * cluster[2]; }
  bool operator==(const BlockGraph&) const = default;
};

struct KernelOp {
  OpKind kind = OpKind::Matmul;  // a predefined op, or BlockGraph
  std::string name;              // kernel name; used for block graphs, optional otherwise
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;  // exactly one for predefined ops
  OpAttrs attrs;
  std::optional<BlockGraph> block;  // set iff kind == BlockGraph

  bool operator==(const KernelOp&) const = default;
};

// A symbolic dim with its range (`dim s in [1, 65536]`): graph/dynamic_dims.h.
struct DynamicDim {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;

  bool operator==(const DynamicDim&) const = default;
};

// A kernel graph of device tensors. A program is a kernel graph of predefined ops only.
struct KernelGraph {
  std::string name;
  std::vector<DynamicDim> dims;  // dynamic dims, in declaration order (empty: all static)
  std::vector<TensorDesc> tensors;
  std::vector<TensorId> inputs;   // in declaration order
  std::vector<KernelOp> ops;      // definition before use
  std::vector<TensorId> outputs;  // in declaration order

  bool operator==(const KernelGraph&) const = default;

  std::optional<TensorId> findTensor(const std::string& tensorName) const;
  bool isProgram() const;  // no block graphs
};

using Program = KernelGraph;

// A schedule: a kernel graph that implements `program` (same input and output names).
struct Schedule {
  std::string name;
  Program program;
  KernelGraph graph;

  bool operator==(const Schedule&) const = default;
};

// Where in a graph a problem is; file readers turn it into a line or a JSON path.
struct IrLocation {
  std::string section;  // "inputs", "ops", "outputs", "tensors" or "kernels"
  int index = -1;       // position in that section
  int blockOp = -1;     // position inside a block graph's ops, or -1
  std::string field;    // e.g. "imap.x", "inputs[1]", "grid"
};

class IrError : public std::runtime_error {
 public:
  IrError(IrLocation location, const std::string& reason)
      : std::runtime_error(reason), location_(std::move(location)) {}
  const IrLocation& location() const { return location_; }

 private:
  IrLocation location_;
};

}  // namespace mugraph::graph
