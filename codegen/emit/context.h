// Internal to the emitter: the state shared by the files that print one kernel (the plan,
// the ABI, names of tiles and parameters) and the small printers they all use. Each file of
// codegen/emit/ prints one kind of code from a decided KernelPlan: one file per lowering
// path (general.cpp, thread_owned.cpp, warpgroup_gemm.cpp, warpgroup_attention.cpp), the
// pieces they share, and kernel.cpp, which prints the entry and picks the path.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "codegen/kernel_abi.h"
#include "plan/kernel_plan.h"

namespace mugraph::codegen {

// The emitters print a plan; these are its parts.
using plan::Extent4;
using plan::InputCopy;
using plan::KernelPlan;
using plan::MmaPlan;
using plan::OpPlan;
using plan::OutputCopy;
using plan::padTo4;
using plan::SharedTile;
using plan::TileHome;

// Lines of CUDA C++ with indentation.
class CudaWriter {
 public:
  void line(const std::string& text) {
    text_ += std::string(static_cast<size_t>(indent_) * 2, ' ') + text + "\n";
  }
  void open(const std::string& text) {
    line(text.empty() ? "{" : text + " {");
    ++indent_;
  }
  void close(const std::string& suffix = "") {
    --indent_;
    line("}" + suffix);
  }
  // "} else {" and the like: closes one block and opens the next.
  void reopen(const std::string& text) {
    --indent_;
    line("} " + text + " {");
    ++indent_;
  }
  void enter() { ++indent_; }  // after a line that ends with "{"
  void blank() { text_ += "\n"; }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  int indent_ = 0;
};

// Four index expressions (padded rank 4); "0" where a dim has extent 1.
using Index4 = std::array<std::string, graph::kMaxRank>;

inline const char* const kCudaBlockIndex[graph::kGridAxes] = {"blockIdx.x", "blockIdx.y",
                                                              "blockIdx.z"};

struct EmitContext {
  const KernelPlan& plan;
  const ScheduleAbi& abi;
  const KernelAbi& kernel;
  CudaWriter& out;
  // The block's index per grid axis, as the kernel names it: blockIdx, or a path's own (the
  // warpgroup attention path walks causal query blocks longest first).
  const char* const* blockIndex = kCudaBlockIndex;
  // Set while printing the for-loop of a block whose every iteration reads whole tiles
  // (wholeLoopCondition): the dims the loop cuts are printed as never partial.
  bool wholeLoopTiles = false;

  const graph::BlockGraph& block() const { return *plan.block; }
  // What the general path decided (only its printers ask).
  const plan::GeneralPlan& general() const { return std::get<plan::GeneralPlan>(plan.path); }
  int threads() const { return plan.block->threads; }
  std::string tileName(graph::TensorId tile) const;       // shared pointer
  std::string registersName(graph::TensorId tile) const;  // register accumulator array
  std::string materializedName(graph::TensorId tile) const;
  std::string factorName(graph::TensorId max) const;  // its rescale factor array
  std::string paramName(int param) const;
  // A stride or step as a 64-bit expression: its number, or its product of the dims' length
  // parameters (graph/dynamic_extents.h).
  std::string product(const graph::DimProduct& value) const;
  // The for-loop's trip count: its number, or `mg_forloop` where it follows a length.
  std::string forloop() const;
  // A grid extent or trip count (graph::LaunchCount) as an int expression: its number, or
  // ⌈n / tile⌉ of its dim's length parameter, "(dim_s + 64 - 1) / 64".
  std::string count(const graph::LaunchCount& count) const;
  // The whole extent of the dim `cut` splits: its number, or its length parameter where it is
  // a dynamic dim.
  std::string extent(const graph::DimSplit& cut) const;
  // Elements between consecutive blocks' parts of `cut`: its blockTile, or the trip count
  // times the tile where the part follows the length (graph::DimSplit::partFollowsLength).
  std::string blockTile(const graph::DimSplit& cut) const;
  // Element (logical index) of a shared tile, as a buffer index expression.
  std::string sharedIndex(graph::TensorId tile, const Index4& index) const;
  // f32 value of a shared tile's element; size-1 dims of the tile broadcast.
  std::string readShared(graph::TensorId tile, const Index4& index) const;
  // Element of the rescale factor array of running max `max`, broadcast like readShared.
  std::string factorElement(graph::TensorId max, const Index4& index) const;
  // Real elements along padded dim `dim` of `tile` in this block at loop iteration
  // `iteration`: an int expression, the tile's extent where the dim is not partial.
  std::string realExtent(graph::TensorId tile, int dim, const std::string& iteration) const;
  // Whether `cut` leaves a partial tile in the code being printed (not where wholeLoopTiles
  // makes the loop's cuts whole).
  bool partialHere(const graph::DimSplit& cut) const;
  // Condition that element `index` of `tile` is real, or "" where every element is.
  std::string realCondition(graph::TensorId tile, const Index4& index,
                            const std::string& iteration) const;
  // Position in its device dim of `tile`'s first element along padded dim `dim` in this block
  // at `iteration` (graph::DimSplit::start).
  std::string tileStart(graph::TensorId tile, int dim, const std::string& iteration) const;
  // causal_mask op `op` (graph/ops.h) at the element of its operand tile in tile row `row` and
  // column `col`, whose value is `x`, at `iteration`.
  std::string causalMask(const graph::BlockOp& op, const std::string& x, const std::string& row,
                         const std::string& col, const std::string& iteration) const;
  // "cols, queries" of causal_mask op `op` for mg::causal_kept and its tile tests: the key
  // columns and query rows per sequence, numbers or length parameters.
  std::string causalShape(const graph::BlockOp& op) const;
};

std::string storageType(graph::DType dtype);  // "float", "mg::f16", "mg::bf16"
inline std::string str(int64_t value) {
  return std::to_string(value);
}
// An index expression as a 64-bit term of an address: "0" stays "0".
std::string wideIndex(const std::string& index);
std::string floatLiteral(double value);  // "0.125f"
// Expression for sum of index*stride, skipping zero indices and strides ("0"), and strides of
// "1".
std::string linearExpression(const std::vector<std::pair<std::string, int64_t>>& terms);
std::string linearExpression(const std::vector<std::pair<std::string, std::string>>& terms);

// Opens a loop of `variable` from `start` (an expression in [0, stride): a thread's or a warp's
// index) to below `count` in steps of `stride`. Where that is at most `maxUnrolled` trips it
// is written as a fully unrolled loop over the trip, so a thread's element indices and
// addresses are constants plus its own offset instead of divisions recomputed every trip.
constexpr int64_t kUnrolledTrips = 8;
constexpr int64_t kUnrolledElementTrips = 0;
void openStridedLoop(const EmitContext& context, const std::string& variable,
                     const std::string& start, int64_t count, int64_t stride,
                     int64_t maxUnrolled = kUnrolledTrips);

// Opens `for (variable = start; variable < elements; variable += stride)` over the elements
// of `extent` (stride 0: the block's thread count) and names the element's index i0..i3.
Index4 openElementLoop(const EmitContext& context, const Extent4& extent,
                       const std::string& variable = "e", const std::string& start = "threadIdx.x",
                       int64_t stride = 0);

// Names the index i0..i3 of linear element `variable` of `extent` ("0" where a dim is 1).
Index4 nameElementIndex(const EmitContext& context, const Extent4& extent,
                        const std::string& variable);

// Element offset of a block's tile in its device tensor: blockIdx times the per-axis steps
// (times the trip count on the axes of `perTrip`, plan::InputCopy::stepPerTrip) plus
// `iteration` times the per-iteration step ("0" when there is none).
std::string baseOffset(const EmitContext& context, const plan::GridSteps& blockStep,
                       const graph::DimProduct& iterationStep, const std::string& iteration,
                       const std::array<bool, graph::kGridAxes>& perTrip = {});

// f32 expression of element-wise op `kind` applied to operand expressions `x`.
std::string elementwiseExpression(graph::OpKind kind, const graph::OpAttrs& attrs,
                                  const std::vector<std::string>& x);

// `const int` variables for the real extents of partial tile dims (EmitContext::realExtent):
// those cut by the grid only (loopDependent false), at the kernel's start, or those cut by the
// for-loop, at the top of each iteration.
void declareRealExtents(const EmitContext& context, bool loopDependent);

// The condition, true in a block whose every loop iteration reads whole tiles along each dim
// the loop cuts into a partial last tile (its last iteration's tile is whole), where one of
// those dims follows a length; "" in a kernel with no such dim. Such a kernel prints its loop
// twice: unmasked under this condition (every block but the one holding a length's end, at
// most), and with the real extents otherwise.
std::string wholeLoopCondition(const EmitContext& context);

// `const int mg_iterations`: the iterations this block runs (fewer than the loop's in the last
// part of a shortened loop, KernelPlan::shortenedLoop); nothing without one. Returns whether
// it declared it.
bool declareBlockIterations(const EmitContext& context, const std::string& part);

// Part printers, one file each.
// `inLoop`: issued every iteration of the for-loop, where a whole tile's copies are unrolled
// (openStridedLoop); the copies before the loop stay a loop (no registers held for them).
void emitInputLoad(const EmitContext& context, int op, const std::string& buffer,
                   const std::string& iteration, bool inLoop = false);
void emitOutputStore(const EmitContext& context, int op);
void emitComputeOp(const EmitContext& context, int op);
void emitReduction(const EmitContext& context, int op);  // reduce_sum, reduce_max, rms_norm
void emitStandaloneAccumulate(const EmitContext& context, int op);
void emitMmaOp(const EmitContext& context, int op);
void emitRegisterOutputStore(const EmitContext& context, int op);
void emitMaterialize(const EmitContext& context, graph::TensorId tile);
// The whole body of a kernel, one printer per lowering path (KernelPlan::path).
void emitGeneralBody(const EmitContext& context);
void emitThreadOwnedBody(const EmitContext& context);
void emitRowOwnedBody(const EmitContext& context);
void emitWarpgroupGemmBody(const EmitContext& context);
void emitWarpgroupAttentionBody(const EmitContext& context);

// Running max `accumulatorOp` (an accum_max) updated with `value` at `index`, `target` its
// element: declares `previous` and `running` in every thread that runs it; the threads where
// `writer` holds (every thread, where it is "") store the running max and, where the max has
// one, the rescale factor, after the threads of their warp have read the old max.
void emitRunningMax(const EmitContext& context, int accumulatorOp, const std::string& target,
                    const std::string& value, const Index4& index, const std::string& writer);

// Element-wise op `opIndex` at `index` into `const float name`, its operands taken from
// `registers` where they are named there (else read from their shared tiles), then its
// register epilogue (emitEpilogue).
void emitElementwiseAt(const EmitContext& context, int opIndex, const Index4& index,
                       const std::map<graph::TensorId, std::string>& registers,
                       const std::string& name);

// The register epilogue of `host` for one element: `value` is the host's result at `index`;
// prints the fused chain, stores to shared tiles and folded accumulator updates.
// `fragment` is the mma fragment index expression (empty outside tensor-core ops).
void emitEpilogue(const EmitContext& context, int host, const std::string& value,
                  const Index4& index, const std::string& fragment);

}  // namespace mugraph::codegen
