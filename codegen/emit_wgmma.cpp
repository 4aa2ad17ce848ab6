// Kernels planned on the sm_90 warpgroup path (plan/kernel_plan.h, WarpgroupMmaPlan): a ring
// of shared-memory stages filled by bulk tensor copies that complete on `full` mbarriers,
// consumer warpgroups that multiply each stage with wgmma.mma_async straight from the
// 128-byte swizzled boxes and release it on its `empty` mbarrier once the next stage's
// multiplies are issued (one wgmma group stays in flight), and an epilogue that stores the
// register accumulators as pairs. With a producer warpgroup, one of its threads issues every
// copy and the warpgroups trade registers (setmaxnreg); without one, thread 0 refills the
// stage the block just released.
#include <algorithm>

#include "codegen/emit_context.h"

namespace mugraph::codegen {
namespace {

using plan::BulkOperand;
using plan::TensorMapDesc;
using plan::WarpgroupMmaPlan;

constexpr int64_t kRowBytes = 128;           // one swizzled row of a box: 64 16-bit elements
constexpr int64_t kSwizzleAtomBytes = 1024;  // 8 rows: the stride between core-matrix groups

std::string str(int64_t value) {
  return std::to_string(value);
}

// The tile a block works on, per grid axis: blockIdx, or the persistent loop's tile.
const char* const kTile[graph::kGridAxes] = {"bx", "by", "bz"};

// Element offset of the block's output tile (emit_copies.cpp's baseOffset with the tile's
// coordinates in place of blockIdx).
std::string tileOffset(const std::array<int64_t, graph::kGridAxes>& blockStep) {
  std::string text;
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (blockStep[axis] == 0) continue;
    text += (text.empty() ? "" : " + ") + std::string("static_cast<long long>(") + kTile[axis] +
            ") * " + str(blockStep[axis]);
  }
  return text.empty() ? "0" : text;
}

// Coordinate i of operand `op`'s box j at iteration `iteration`.
std::string coordinate(const BulkOperand& op, int i, const std::string& iteration, int box) {
  std::string text;
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (op.blockStep[i][axis] == 0) continue;
    text +=
        (text.empty() ? "" : " + ") + std::string(kTile[axis]) + " * " + str(op.blockStep[i][axis]);
  }
  if (op.iterationStep[i] != 0) {
    text += (text.empty() ? "" : " + ") + iteration + " * " + str(op.iterationStep[i]);
  }
  if (i == 0 && box > 0) text += (text.empty() ? "" : " + ") + str(64 * box);
  return text.empty() ? "0" : text;
}

// The descriptor of operand `op` at 16-wide K step kk, for rows from `rows0` (A: the m64
// tile's first row; B: 0): K-major boxes hold 64 of K per row, so step kk is 32 bytes into
// box kk / 4; MN-major boxes hold 16 rows of K per 2048 bytes and 64 of M or N per box.
std::string descriptor(const BulkOperand& op, const std::string& stageBase, int64_t rows0, int kk) {
  int64_t offset;
  int64_t leading;
  if (op.kMajor) {
    offset = (kk / 4) * op.boxBytes + (kk % 4) * 32 + rows0 * kRowBytes;
    leading = 16;  // unused by swizzled K-major layouts ("assumed 1")
  } else {
    offset = (rows0 / 64) * op.boxBytes + kk * 16 * kRowBytes;
    leading = op.boxBytes;  // the next 64 of M or N
  }
  return "mg::wgmma_descriptor_128b(" + stageBase + " + " + str(offset) + ", " + str(leading) +
         ", " + str(kSwizzleAtomBytes) + ")";
}

// The multiplying warpgroup(s): per tile (opened here when `opensTiles`), the loop over
// stages, then the epilogue. `g` counts iterations over all of the block's tiles, so the
// stage ring and its phases run on from one tile to the next.

// Real rows (dimFromEnd 2) or columns (1) of output tile `tile` in the block's tile (kTile),
// or "" where that dim is not partial: past them the copy engine read zeros and nothing may
// be stored (graph/tile_splits.h).
std::string realOutputExtent(const KernelPlan& plan, graph::TensorId tile, int dimFromEnd) {
  const graph::TileSplit& split = plan.splits.at(tile);
  const graph::DimSplit& cut = split.at(split.size() - static_cast<size_t>(dimFromEnd));
  if (!cut.partial()) return "";
  return "mg::tile_extent(" + str(cut.extent) + ", " + str(cut.blockTile) + ", " + str(cut.tile) +
         ", " + (cut.gridAxis == graph::kReplicated ? "0" : kTile[cut.gridAxis]) + ", 0)";
}

// acc[t][4 * j + r] is row rows0 + 64 t + 16 warp + lane / 4 + 8 (r / 2), column
// 8 j + 2 (lane % 4) + r % 2 of the block's result.
void emitAccumulatorStore(const EmitContext& context_, int outputOp, const std::string& acc,
                          int mTiles, int64_t n, int64_t rowsPerConsumer, int64_t epilogueOffset) {
  CudaWriter& out_ = context_.out;
  const KernelPlan& plan = context_.plan;
  const graph::BlockOp& output = context_.block().ops[outputOp];
  const plan::OutputCopy& copy = *plan.outputs[outputOp];
  const graph::TensorId tensor = plan.kernel->outputs[output.kernelTensor];
  const graph::TensorDesc& dest = plan.graph->tensors[tensor];
  int param = -1;
  for (size_t p = 0; p < context_.kernel.params.size(); ++p) {
    if (context_.kernel.params[p].tensor == tensor) param = static_cast<int>(p);
  }
  const std::string rows = str(rowsPerConsumer);
  const std::string stride = str(copy.globalStride[2]);
  const std::string type = storageType(dest.dtype);
  out_.line("// output " + context_.block().tensors[output.inputs[0]].name);
  out_.line(type + "* const out = " + context_.paramName(param) + " + (" +
            tileOffset(copy.blockStep) + ");");
  // A partial tile stores its real rows and columns only.
  std::string realRows = realOutputExtent(plan, output.inputs[0], 2);
  std::string realCols = realOutputExtent(plan, output.inputs[0], 1);
  if (!realRows.empty()) out_.line("const int realRows = " + realRows + ";");
  if (!realCols.empty()) out_.line("const int realCols = " + realCols + ";");
  if (epilogueOffset < 0) {
    // Pairs where a row's pairs are aligned (an even row stride), else element by element.
    const bool pairs = copy.globalStride[2] % 2 == 0 && realCols.empty();
    out_.line("#pragma unroll");
    out_.open("for (int t = 0; t < " + str(mTiles) + "; ++t)");
    out_.line("#pragma unroll");
    out_.open("for (int j = 0; j < " + str(n / 8) + "; ++j)");
    out_.line("#pragma unroll");
    out_.open("for (int h = 0; h < 2; ++h)");
    out_.line("const int row = consumer * " + rows +
              " + t * 64 + warp * 16 + (lane >> 2) + h * 8;");
    out_.line("const int col = j * 8 + ((lane & 3) << 1);");
    if (!realRows.empty()) out_.line("if (row >= realRows) continue;");
    const std::string at = "out + static_cast<long long>(row) * " + stride + " + col";
    if (pairs) {
      out_.line("mg::store_pair(" + at + ", " + acc + "[4 * j + 2 * h], " + acc +
                "[4 * j + 2 * h + 1]);");
    } else {
      const std::string limit = realCols.empty() ? "" : "if (col + c < realCols) ";
      out_.line("#pragma unroll");
      out_.line("for (int c = 0; c < 2; ++c) " + limit + "(" + at + ")[c] = mg::from_f32<" + type +
                ">(" + acc + "[4 * j + 2 * h + c]);");
    }
    out_.close();
    out_.close();
    out_.close();
    return;
  }
  // Through the warp's staging buffer, 16 rows by 64 columns at a time: pairs in (16-byte
  // chunk c of row r at c ^ (r & 7), so the eight rows a store instruction touches hit
  // distinct banks), then each row out as eight 16-byte stores.
  out_.line("unsigned char* const staging = mg_smem + " + str(epilogueOffset) +
            " + (consumer * 4 + warp) * 2048;");
  out_.line("#pragma unroll");
  out_.open("for (int t = 0; t < " + str(mTiles) + "; ++t)");
  out_.line("#pragma unroll");
  out_.open("for (int q = 0; q < " + str(n / 64) + "; ++q)");
  out_.line("#pragma unroll");
  out_.open("for (int jj = 0; jj < 8; ++jj)");
  out_.line("#pragma unroll");
  out_.open("for (int h = 0; h < 2; ++h)");
  out_.line("const int r = (lane >> 2) + h * 8;");
  out_.line("const int f = 4 * (q * 8 + jj) + 2 * h;");
  out_.line(
      "*reinterpret_cast<unsigned*>(staging + r * 128 + ((jj ^ (r & 7)) << 4) + "
      "((lane & 3) << 2)) = mg::pack2<" +
      storageType(dest.dtype) + ">(" + acc + "[f], " + acc + "[f + 1]);");
  out_.close();
  out_.close();
  out_.line("__syncwarp();");
  out_.line("#pragma unroll");
  out_.open("for (int i = 0; i < 4; ++i)");
  out_.line("const int r = (lane >> 3) + i * 4;");
  out_.line("const int chunk = lane & 7;");
  out_.line("const int row = consumer * " + rows + " + t * 64 + warp * 16 + r;");
  const std::string at = "out + static_cast<long long>(row) * " + stride + " + q * 64 + chunk * 8";
  const std::string from = "staging + r * 128 + ((chunk ^ (r & 7)) << 4)";
  if (!realRows.empty()) out_.line("if (row >= realRows) continue;");
  if (!realCols.empty()) {
    // The chunk that straddles the end goes element by element; none past it.
    out_.line("const int left = realCols - (q * 64 + chunk * 8);");
    out_.open("if (left < 8)");
    out_.line("for (int e = 0; e < left; ++e) (" + at + ")[e] = reinterpret_cast<const " + type +
              "*>(" + from + ")[e];");
    out_.line("continue;");
    out_.close();
  }
  out_.line("mg::copy_chunk<16>(" + at + ", " + from + ");");
  out_.close();
  out_.line("__syncwarp();");
  out_.close();
  out_.close();
}

class WarpgroupEmitter {
 public:
  explicit WarpgroupEmitter(const EmitContext& context)
      : context_(context), out_(context.out), wg_(*context.plan.warpgroupMma) {}

  void emit() {
    const int stages = wg_.stages;
    out_.line("extern __shared__ __align__(1024) unsigned char mg_smem_raw[];");
    out_.line("// The 128-byte swizzle repeats every 1024 bytes: stages start on that boundary.");
    out_.line("unsigned char* const mg_smem = reinterpret_cast<unsigned char*>(");
    out_.line("    (reinterpret_cast<unsigned long long>(mg_smem_raw) + 1023ull) & ~1023ull);");
    out_.line("unsigned long long* const full = reinterpret_cast<unsigned long long*>(mg_smem + " +
              str(wg_.barrierOffset) + ");");
    out_.line("unsigned long long* const empty = full + " + str(stages) + ";");
    out_.line("const int warpgroup = threadIdx.x / 128;");
    out_.line("(void)warpgroup;");
    out_.open("if (threadIdx.x == 0)");
    for (size_t m = 0; m < wg_.maps.size(); ++m) {
      out_.line("mg::prefetch_tensor_map(&" + mapName(static_cast<int>(m)) + ");");
    }
    out_.open("for (int s = 0; s < " + str(stages) + "; ++s)");
    out_.line("mg::mbarrier_init(&full[s], 1);");
    out_.line("mg::mbarrier_init(&empty[s], " + str(wg_.consumers * 4) + ");");
    out_.close();
    out_.line("mg::fence_mbarrier_init();");
    out_.close();
    out_.line("__syncthreads();");
    const int64_t forloop = context_.block().forloop;
    if (wg_.producer) {
      out_.open("if (warpgroup == 0)");
      out_.line("mg::setmaxnreg_dec<" + str(wg_.producerRegisters) + ">();");
      out_.open("if (threadIdx.x == 0)");
      out_.line("int g = 0;  // iterations issued so far, over every tile of this block");
      openTiles();
      out_.open("for (int it = 0; it < " + str(forloop) + "; ++it, ++g)");
      out_.line("const int s = g % " + str(stages) + ";");
      out_.line("if (g >= " + str(stages) + ") mg::mbarrier_wait(&empty[s], ((g / " + str(stages) +
                ") - 1) & 1);");
      emitIssue("it", "s");
      out_.close();
      closeTiles();
      out_.close();
      out_.reopen("else");
      out_.line("mg::setmaxnreg_inc<" + str(wg_.consumerRegisters) + ">();");
      emitConsumer("warpgroup - 1", true);
      out_.close();
    } else {
      openTiles();
      out_.open("if (threadIdx.x == 0)");
      out_.open("for (int it = 0; it < " + str(std::min<int64_t>(stages, forloop)) + "; ++it)");
      emitIssue("it", "it");
      out_.close();
      out_.close();
      emitConsumer("0", false);
      closeTiles();
    }
  }

 private:
  std::string mapName(int map) const { return "mg_map" + std::to_string(map); }

  // Opens the block's tiles: one (blockIdx) or, persistent, every gridDim.x-th in grouped
  // order; names the tile's coordinates bx, by, bz.
  void openTiles() {
    const graph::BlockGraph& block = context_.block();
    if (!wg_.persistent) {
      out_.open("");
      out_.line("const int bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;");
      out_.line("(void)bx; (void)by; (void)bz;");
      return;
    }
    const int64_t gx = block.grid[0], gy = block.grid[1];
    const int64_t tiles = gx * gy * block.grid[2];
    const int64_t group = wg_.rasterGroup;
    out_.open("for (int tile = blockIdx.x; tile < " + str(tiles) + "; tile += gridDim.x)");
    out_.line("const int bz = tile / " + str(gx * gy) + ";");
    out_.line("const int inGrid = tile % " + str(gx * gy) + ";");
    out_.line("const int first = inGrid / " + str(group * gy) + " * " + str(group) + ";");
    out_.line("const int width = " + str(gx) + " - first < " + str(group) + " ? " + str(gx) +
              " - first : " + str(group) + ";");
    out_.line("const int bx = first + inGrid % " + str(group * gy) + " % width;");
    out_.line("const int by = inGrid % " + str(group * gy) + " / width;");
    out_.line("(void)bz;");
  }
  void closeTiles() { out_.close(); }
  std::string type() const { return storageType(wg_.dtype); }

  // One stage's copies for iteration `iteration` into stage `stage` (one thread).
  void emitIssue(const std::string& iteration, const std::string& stage) {
    const int64_t bytes = wg_.a.boxBytes * wg_.a.boxes + wg_.b.boxBytes * wg_.b.boxes;
    out_.line("mg::mbarrier_arrive_expect_tx(&full[" + stage + "], " + str(bytes) + ");");
    for (const BulkOperand* op : {&wg_.a, &wg_.b}) {
      const TensorMapDesc& map = wg_.maps[op->map];
      for (int j = 0; j < op->boxes; ++j) {
        std::string call = "mg::bulk_tensor_load_" + std::to_string(map.rank) + "d(mg_smem + " +
                           stage + " * " + str(wg_.stageBytes) + " + " +
                           str(op->offset + j * op->boxBytes) + ", &" + mapName(op->map) +
                           ", &full[" + stage + "]";
        for (int i = 0; i < map.rank; ++i) call += ", " + coordinate(*op, i, iteration, j);
        out_.line(call + ");");
      }
    }
  }

  void emitConsumer(const std::string& consumerIndex, bool opensTiles) {
    const int stages = wg_.stages;
    const int64_t forloop = context_.block().forloop;
    const int64_t rowsPerConsumer = wg_.m / wg_.consumers;
    const int accumulators = static_cast<int>(wg_.n / 2);
    out_.line("const int consumer = " + consumerIndex + ";");
    out_.line("const int lane = threadIdx.x & 31;");
    out_.line("const int warp = (threadIdx.x / 32) & 3;  // within the warpgroup");
    out_.line("int g = 0;");
    if (opensTiles) openTiles();
    out_.line("float acc[" + str(wg_.mTiles) + "][" + str(accumulators) + "];");
    out_.line("#pragma unroll");
    out_.open("for (int t = 0; t < " + str(wg_.mTiles) + "; ++t)");
    out_.line("#pragma unroll");
    out_.line("for (int f = 0; f < " + str(accumulators) + "; ++f) acc[t][f] = 0.0f;");
    out_.close();
    out_.open("for (int it = 0; it < " + str(forloop) + "; ++it, ++g)");
    out_.line("const int s = g % " + str(stages) + ";");
    out_.line("mg::mbarrier_wait(&full[s], (g / " + str(stages) + ") & 1);");
    out_.line("const unsigned char* const stage = mg_smem + s * " + str(wg_.stageBytes) + ";");
    out_.line("const int rows0 = consumer * " + str(rowsPerConsumer) + ";");
    out_.line(
        "const unsigned char* const aBase = stage + " + str(wg_.a.offset) + " + (" +
        (wg_.a.kMajor ? "rows0 * " + str(kRowBytes) : "(rows0 / 64) * " + str(wg_.a.boxBytes)) +
        ");");
    out_.line("const unsigned char* const bBase = stage + " + str(wg_.b.offset) + ";");
    out_.line("mg::wgmma_fence();");
    const std::string call = "mg::wgmma_m64n" + str(wg_.n) + "k16<" + (wg_.a.kMajor ? "0" : "1") +
                             ", " + (wg_.b.kMajor ? "0" : "1") + ">";
    for (int kk = 0; kk < wg_.k / 16; ++kk) {
      const std::string b = descriptor(wg_.b, "bBase", 0, kk);
      for (int t = 0; t < wg_.mTiles; ++t) {
        const std::string a = descriptor(wg_.a, "aBase", t * 64, kk);
        out_.line(call + "(acc[" + str(t) + "], " + a + ", " + b + ", static_cast<const " + type() +
                  "*>(nullptr));");
      }
    }
    out_.line("mg::wgmma_commit_group();");
    out_.line("// The previous stage's multiplies are done: release its buffer.");
    out_.line("mg::wgmma_wait_group<1>();");
    out_.line("if (it > 0 && lane == 0) mg::mbarrier_arrive(&empty[(g - 1) % " + str(stages) +
              "]);");
    if (!wg_.producer && forloop > stages) {
      out_.open("if (threadIdx.x == 0 && it > 0 && it - 1 + " + str(stages) + " < " + str(forloop) +
                ")");
      out_.line("const int refill = it - 1 + " + str(stages) + ";");
      out_.line("const int r = refill % " + str(stages) + ";");
      out_.line("mg::mbarrier_wait(&empty[r], ((it - 1) / " + str(stages) + ") & 1);");
      emitIssue("refill", "r");
      out_.close();
    }
    out_.close();
    out_.line("mg::wgmma_wait_group<0>();");
    out_.line("#pragma unroll");
    out_.line("for (int t = 0; t < " + str(wg_.mTiles) +
              "; ++t) mg::wgmma_fence_operands(acc[t]);");
    out_.line("if (lane == 0) mg::mbarrier_arrive(&empty[(g - 1) % " + str(stages) + "]);");
    emitAccumulatorStore(context_, wg_.outputOp, "acc[t]", wg_.mTiles, wg_.n, wg_.m / wg_.consumers,
                         wg_.epilogueOffset);
    if (opensTiles) closeTiles();
  }

  const EmitContext& context_;
  CudaWriter& out_;
  const WarpgroupMmaPlan& wg_;
};

// Attention on the warpgroup path (plan/kernel_plan.h, WarpgroupAttentionPlan). Per consumer
// warpgroup and iteration: S = Q·K into `kv / 2` accumulators, the chain of ops on S and its
// rows in registers, O rescaled by its factor, then O += P·V with P packed from registers.
class AttentionEmitter {
 public:
  explicit AttentionEmitter(const EmitContext& context)
      : context_(context),
        out_(context.out),
        at_(*context.plan.warpgroupAttention),
        block_(context.block()) {}

  void emit() {
    const int stages = at_.stages;
    out_.line("extern __shared__ __align__(1024) unsigned char mg_smem_raw[];");
    out_.line("unsigned char* const mg_smem = reinterpret_cast<unsigned char*>(");
    out_.line("    (reinterpret_cast<unsigned long long>(mg_smem_raw) + 1023ull) & ~1023ull);");
    out_.line("unsigned long long* const full = reinterpret_cast<unsigned long long*>(mg_smem + " +
              str(at_.barrierOffset) + ");");
    out_.line("unsigned long long* const empty = full + " + str(stages) + ";");
    out_.line("unsigned long long* const qFull = full + " + str(2 * stages) + ";");
    out_.line("const int warpgroup = threadIdx.x / 128;");
    out_.line("const int bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;");
    out_.line("(void)bx; (void)by; (void)bz;");
    out_.open("if (threadIdx.x == 0)");
    for (size_t m = 0; m < at_.maps.size(); ++m) {
      out_.line("mg::prefetch_tensor_map(&mg_map" + std::to_string(m) + ");");
    }
    out_.open("for (int s = 0; s < " + str(stages) + "; ++s)");
    out_.line("mg::mbarrier_init(&full[s], 1);");
    out_.line("mg::mbarrier_init(&empty[s], " + str(at_.consumers * 4) + ");");
    out_.close();
    out_.line("mg::mbarrier_init(qFull, 1);");
    out_.line("mg::fence_mbarrier_init();");
    out_.close();
    out_.line("__syncthreads();");
    out_.open("if (warpgroup == 0)");
    out_.line("mg::setmaxnreg_dec<" + str(at_.producerRegisters) + ">();");
    out_.open("if (threadIdx.x == 0)");
    out_.line("mg::mbarrier_arrive_expect_tx(qFull, " + str(at_.q.boxBytes * at_.q.boxes) + ");");
    emitLoads(at_.q, "mg_smem + " + str(at_.q.offset), "qFull", "0");
    openIterations();
    out_.line("const int s = it % " + str(stages) + ";");
    out_.line("if (it >= " + str(stages) + ") mg::mbarrier_wait(&empty[s], ((it / " + str(stages) +
              ") - 1) & 1);");
    out_.line("unsigned char* const stage = mg_smem + " + str(at_.stagesOffset) + " + s * " +
              str(at_.stageBytes) + ";");
    out_.line("mg::mbarrier_arrive_expect_tx(&full[s], " +
              str(at_.k.boxBytes * at_.k.boxes + at_.v.boxBytes * at_.v.boxes) + ");");
    emitLoads(at_.k, "stage + " + str(at_.k.offset), "&full[s]", "it");
    emitLoads(at_.v, "stage + " + str(at_.v.offset), "&full[s]", "it");
    out_.close();
    out_.close();
    out_.reopen("else");
    out_.line("mg::setmaxnreg_inc<" + str(at_.consumerRegisters) + ">();");
    emitConsumer();
    out_.close();
  }

 private:
  std::string name(graph::TensorId t) const { return "t" + std::to_string(t); }

  // The loop over iterations, copies and multiplies alike; a block whose last part holds fewer
  // real iterations stops after them (graph/tile_splits.h).
  void openIterations() {
    const std::optional<graph::DimSplit>& loop = context_.plan.shortenedLoop;
    const bool shortened =
        loop && declareBlockIterations(
                    context_, loop->gridAxis == graph::kReplicated ? "0" : kTile[loop->gridAxis]);
    out_.open("for (int it = 0; it < " + str(block_.forloop) + "; ++it)");
    if (shortened) out_.line("if (it >= mg_iterations) break;");
  }
  int64_t width(plan::FragmentRole role) const {
    return role == plan::FragmentRole::S   ? at_.kv / 2
           : role == plan::FragmentRole::O ? at_.d / 2
                                           : 2;
  }
  // Real key positions of S-shaped tile `t` in this iteration, or "" where every position is
  // real (partial tiles, graph/tile_splits.h).
  std::string realKv(graph::TensorId t) const {
    const std::string real = context_.realExtent(t, graph::kMaxRank - 1, "it");
    return real == str(at_.kv) ? "" : real;
  }

  // Whether S-shaped tile `t` feeds a sum over key positions (a row sum, or P of P·V): its
  // padding must be zero there. Padded query rows need nothing: rows never mix, Q's padding
  // is zero-filled, so their values stay finite, and they are not stored.
  bool summedOverKv(graph::TensorId t) const {
    for (int consumer : context_.plan.consumers[t]) {
      const graph::BlockOp& op = block_.ops[consumer];
      if (op.kind == graph::OpKind::ReduceSum) return true;
      if (consumer == at_.secondMatmulOp && op.inputs[0] == t) return true;
    }
    return false;
  }

  // Operand `t` at fragment element f (row half h) of a tile of role `role`.
  std::string operand(graph::TensorId t, plan::FragmentRole role) const {
    return name(t) + (at_.roles[t] == plan::FragmentRole::Row && role != plan::FragmentRole::Row
                          ? "[(f >> 1) & 1]"
                          : "[f]");
  }

  void emitLoads(const BulkOperand& op, const std::string& base, const std::string& bar,
                 const std::string& iteration) {
    const TensorMapDesc& map = at_.maps[op.map];
    for (int j = 0; j < op.boxes; ++j) {
      std::string call = "mg::bulk_tensor_load_" + std::to_string(map.rank) + "d(" + base + " + " +
                         str(j * op.boxBytes) + ", &mg_map" + std::to_string(op.map) + ", " + bar;
      for (int i = 0; i < map.rank; ++i) call += ", " + coordinate(op, i, iteration, j);
      out_.line(call + ");");
    }
  }

  bool isAccumulator(int op) const { return graph::isAccumulator(block_.ops[op].kind); }

  // The accumulator op reading the second matmul's result (it is folded into the wgmma).
  int outputAccumulator() const {
    return context_.plan.consumers[block_.ops[at_.secondMatmulOp].output][0];
  }

  void emitConsumer() {
    const KernelPlan& plan = context_.plan;
    out_.line("const int consumer = warpgroup - 1;");
    out_.line("const int lane = threadIdx.x & 31;");
    out_.line("const int warp = (threadIdx.x / 32) & 3;  // within the warpgroup");
    declareRealExtents(context_, false);
    // Accumulators live across the loop.
    for (size_t o = 0; o < block_.ops.size(); ++o) {
      const graph::BlockOp& op = block_.ops[o];
      if (!graph::isAccumulator(op.kind)) continue;
      const plan::FragmentRole role = at_.roles[op.output];
      out_.line("float " + name(op.output) + "[" + str(width(role)) + "];");
      out_.line("#pragma unroll");
      out_.line("for (int f = 0; f < " + str(width(role)) + "; ++f) " + name(op.output) +
                "[f] = 0.0f;");
      if (op.kind == graph::OpKind::AccumMax) {
        out_.line("float " + name(op.output) + "_factor[2] = {0.0f, 0.0f};");
      }
    }
    out_.line("mg::mbarrier_wait(qFull, 0);");
    out_.line("const unsigned char* const qBase = mg_smem + " + str(at_.q.offset) + " + (" +
              (at_.q.kMajor ? "consumer * 64 * 128" : "consumer * " + str(at_.q.boxBytes)) + ");");
    openIterations();
    out_.line("const int s = it % " + str(at_.stages) + ";");
    out_.line("mg::mbarrier_wait(&full[s], (it / " + str(at_.stages) + ") & 1);");
    out_.line("const unsigned char* const stage = mg_smem + " + str(at_.stagesOffset) + " + s * " +
              str(at_.stageBytes) + ";");
    declareRealExtents(context_, true);
    out_.line("const unsigned char* const kBase = stage + " + str(at_.k.offset) + ";");
    out_.line("const unsigned char* const vBase = stage + " + str(at_.v.offset) + ";");
    for (size_t o = 0; o < block_.ops.size(); ++o) {
      const int index = static_cast<int>(o);
      const graph::BlockOp& op = block_.ops[o];
      if (op.kind == graph::OpKind::Input || op.kind == graph::OpKind::Output) continue;
      if (!plan::runsInLoop(plan, index)) continue;
      emitOp(index);
    }
    out_.line("if (lane == 0) mg::mbarrier_arrive(&empty[s]);");
    out_.close();
    for (size_t o = 0; o < block_.ops.size(); ++o) {
      const int index = static_cast<int>(o);
      const graph::BlockOp& op = block_.ops[o];
      if (op.kind == graph::OpKind::Input || op.kind == graph::OpKind::Output) continue;
      if (plan::runsInLoop(plan, index)) continue;
      emitOp(index);
    }
    const graph::TensorId result = block_.ops[at_.outputOp].inputs[0];
    emitAccumulatorStore(context_, at_.outputOp, name(result), 1, at_.d, 64, at_.epilogueOffset);
  }

  void emitOp(int index) {
    const graph::BlockOp& op = block_.ops[index];
    const plan::FragmentRole role = at_.roles[op.output];
    out_.line("// " + std::string(graph::opName(op.kind)) + " -> " +
              block_.tensors[op.output].name);
    if (index == at_.firstMatmulOp) {
      emitFirstMatmul(op);
    } else if (index == at_.secondMatmulOp) {
      emitSecondMatmul(op);
    } else if (graph::isElementwise(op.kind)) {
      std::vector<std::string> operands;
      for (graph::TensorId t : op.inputs) operands.push_back(operand(t, role));
      out_.line("float " + name(op.output) + "[" + str(width(role)) + "];");
      out_.line("#pragma unroll");
      out_.line("for (int f = 0; f < " + str(width(role)) + "; ++f) " + name(op.output) +
                "[f] = " + elementwiseExpression(op.kind, op.attrs, operands) + ";");
      const std::string real = role == plan::FragmentRole::S ? realKv(op.output) : "";
      if (!real.empty() && summedOverKv(op.output)) {
        // Only the last iteration of a partial sequence has padding to zero.
        out_.open("if (" + real + " < " + str(at_.kv) + ")");
        out_.line("#pragma unroll");
        out_.line("for (int f = 0; f < " + str(width(role)) + "; ++f) if ((f >> 2) * 8 + " +
                  "((lane & 3) << 1) + (f & 1) >= " + real + ") " + name(op.output) +
                  "[f] = 0.0f;");
        out_.close();
      }
    } else if (op.kind == graph::OpKind::ReduceMax || op.kind == graph::OpKind::ReduceSum) {
      const bool max = op.kind == graph::OpKind::ReduceMax;
      const std::string x = name(op.inputs[0]);
      // A max over a partial row skips the padding (a sum adds its zeros): past the real key
      // positions a term is the max's identity.
      const std::string real = max ? realKv(op.inputs[0]) : "";
      const std::string term = x + "[4 * j + 2 * h + c]";
      out_.line("float " + name(op.output) + "[2];");
      const auto reduce = [&](bool guarded) {
        const std::string value = guarded ? "(j * 8 + ((lane & 3) << 1) + c < " + real + " ? " +
                                                term + " : mg::negative_infinity())"
                                          : term;
        out_.line("#pragma unroll");
        out_.open("for (int h = 0; h < 2; ++h)");
        out_.line(guarded ? "float v = mg::negative_infinity();" : "float v = " + x + "[2 * h];");
        out_.line("#pragma unroll");
        out_.open("for (int j = 0; j < " + str(at_.kv / 8) + "; ++j)");
        out_.line("#pragma unroll");
        out_.open("for (int c = 0; c < 2; ++c)");
        if (!guarded) out_.line("if (j == 0 && c == 0) continue;");
        out_.line(max ? "v = mg::max_of(v, " + value + ");" : "v += " + term + ";");
        out_.close();
        out_.close();
        out_.line(max ? "v = mg::max_of(v, __shfl_xor_sync(0xffffffffu, v, 1));"
                      : "v += __shfl_xor_sync(0xffffffffu, v, 1);");
        out_.line(max ? "v = mg::max_of(v, __shfl_xor_sync(0xffffffffu, v, 2));"
                      : "v += __shfl_xor_sync(0xffffffffu, v, 2);");
        out_.line(name(op.output) + "[h] = v;");
        out_.close();
      };
      if (real.empty()) {
        reduce(false);
      } else {
        // Only the last iteration of a partial sequence has padding to skip.
        out_.open("if (" + real + " < " + str(at_.kv) + ")");
        reduce(true);
        out_.reopen("else");
        reduce(false);
        out_.close();
      }
    } else if (op.kind == graph::OpKind::AccumMax) {
      const std::string m = name(op.output);
      const std::string x = name(op.inputs[0]);
      out_.line("#pragma unroll");
      out_.open("for (int h = 0; h < 2; ++h)");
      out_.line("const float updated = it == 0 ? " + x + "[h] : mg::max_of(" + m + "[h], " + x +
                "[h]);");
      out_.line(m + "_factor[h] = it == 0 ? 0.0f : expf(" + m + "[h] - updated);");
      out_.line(m + "[h] = updated;");
      out_.close();
    } else if (role == plan::FragmentRole::Row &&
               (op.kind == graph::OpKind::AccumSum || op.kind == graph::OpKind::AccumRescaledSum)) {
      const std::string acc = name(op.output);
      const std::string x = name(op.inputs[0]);
      const std::string scale = op.kind == graph::OpKind::AccumRescaledSum
                                    ? " * " + name(op.inputs[1]) + "_factor[h]"
                                    : "";
      out_.line("#pragma unroll");
      out_.line("for (int h = 0; h < 2; ++h) " + acc + "[h] = " + acc + "[h]" + scale + " + " + x +
                "[h];");
    }
    // The O accumulator is updated by the second matmul's wgmma (emitSecondMatmul).
  }

  void emitFirstMatmul(const graph::BlockOp& op) {
    const std::string s = name(op.output);
    out_.line("float " + s + "[" + str(at_.kv / 2) + "];");
    out_.line("#pragma unroll");
    out_.line("for (int f = 0; f < " + str(at_.kv / 2) + "; ++f) " + s + "[f] = 0.0f;");
    out_.line("mg::wgmma_fence();");
    const std::string call = "mg::wgmma_m64n" + str(at_.kv) + "k16<" + (at_.q.kMajor ? "0" : "1") +
                             ", " + (at_.k.kMajor ? "0" : "1") + ">";
    for (int kk = 0; kk < at_.d / 16; ++kk) {
      out_.line(call + "(" + s + ", " + descriptor(at_.q, "qBase", 0, kk) + ", " +
                descriptor(at_.k, "kBase", 0, kk) + ", static_cast<const " +
                storageType(at_.dtype) + "*>(nullptr));");
    }
    out_.line("mg::wgmma_commit_group();");
    out_.line("mg::wgmma_wait_group<0>();");
    out_.line("mg::wgmma_fence_operands(" + s + ");");
  }

  void emitSecondMatmul(const graph::BlockOp& op) {
    const graph::BlockOp& acc = block_.ops[outputAccumulator()];
    const std::string o = name(acc.output);
    const std::string p = name(op.inputs[0]);
    if (acc.kind == graph::OpKind::AccumRescaledSum) {
      out_.line("#pragma unroll");
      out_.line("for (int f = 0; f < " + str(at_.d / 2) + "; ++f) " + o +
                "[f] *= " + name(acc.inputs[1]) + "_factor[(f >> 1) & 1];");
    }
    // P's columns [16 kk, 16 kk + 16) are S's accumulators 8 kk .. 8 kk + 7, packed in pairs.
    out_.line("unsigned packed[" + str(at_.kv / 16) + "][4];");
    out_.line("#pragma unroll");
    out_.open("for (int kk = 0; kk < " + str(at_.kv / 16) + "; ++kk)");
    out_.line("#pragma unroll");
    out_.line("for (int r = 0; r < 4; ++r) packed[kk][r] = mg::pack2<" + storageType(at_.dtype) +
              ">(" + p + "[8 * kk + 2 * r], " + p + "[8 * kk + 2 * r + 1]);");
    out_.close();
    out_.line("mg::wgmma_fence();");
    const std::string call =
        "mg::wgmma_m64n" + str(at_.d) + "k16_rs<" + (at_.v.kMajor ? "0" : "1") + ">";
    for (int kk = 0; kk < at_.kv / 16; ++kk) {
      out_.line(call + "(" + o + ", packed[" + str(kk) + "], " + descriptor(at_.v, "vBase", 0, kk) +
                ", static_cast<const " + storageType(at_.dtype) + "*>(nullptr));");
    }
    out_.line("mg::wgmma_commit_group();");
    out_.line("mg::wgmma_wait_group<0>();");
    out_.line("mg::wgmma_fence_operands(" + o + ");");
  }

  const EmitContext& context_;
  CudaWriter& out_;
  const plan::WarpgroupAttentionPlan& at_;
  const graph::BlockGraph& block_;
};

}  // namespace

void emitWarpgroupMmaBody(const EmitContext& context) {
  if (context.plan.warpgroupAttention) {
    AttentionEmitter(context).emit();
  } else {
    WarpgroupEmitter(context).emit();
  }
}

}  // namespace mugraph::codegen
