// Kernels planned on the sm_90 warpgroup GEMM path (plan/paths/warpgroup_mma_plan.h): the
// ring's stages filled by bulk tensor copies, consumer warpgroups that multiply each stage
// with wgmma.mma_async straight from the swizzled boxes and release it once the next stage's
// multiplies are issued (one wgmma group stays in flight), and the epilogue. With a producer
// warpgroup, one of its threads issues every copy and the warpgroups trade registers
// (setmaxnreg); where an operand's rows are not 16-byte aligned, every producer thread
// gathers its share of that operand with cp.async instead. Without a producer warpgroup,
// thread 0 refills the stage the block just released. The ring,
// its barriers and the epilogue come from warpgroup_printer.h.
#include <algorithm>

#include "codegen/emit/warpgroup_printer.h"

namespace mugraph::codegen {
namespace {

using plan::BulkOperand;
using plan::WarpgroupMmaPlan;

class GemmEmitter {
 public:
  explicit GemmEmitter(const EmitContext& context)
      : context_(context),
        out_(context.out),
        wg_(*context.plan.as<WarpgroupMmaPlan>()),
        ring_(context, wg_, wg_.dtype) {}

  void emit() {
    const int stages = wg_.stages;
    ring_.declareRing({});
    out_.line("(void)warpgroup;");
    ring_.initializeRing({});
    const int64_t forloop = context_.block().forloop;
    if (wg_.producer) {
      out_.open("if (warpgroup == 0)");
      ring_.setmaxnreg(true);
      if (gathers()) {
        emitGatheringProducer();
      } else {
        out_.open("if (threadIdx.x == 0)");
        out_.line("int g = 0;  // iterations issued so far, over every tile of this block");
        openTiles();
        out_.open("for (int it = 0; it < " + str(forloop) + "; ++it, ++g)");
        ring_.acquireStage("g");
        emitIssue("it", "s");
        out_.close();
        closeTiles();
        out_.close();
      }
      out_.reopen("else");
      ring_.setmaxnreg(false);
      emitConsumer("warpgroup - 1", true);
      out_.close();
      if (wg_.clusterBlocks > 1) {
        out_.line(
            "// No block leaves while the cluster's consumers may still arrive on its barriers.");
        out_.line("mg::cluster_sync();");
      }
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
    // The tiles along each axis: numbers, or counts of a length where the kernel takes them
    // (the launch is one block per multiprocessor either way).
    std::string count[graph::kGridAxes];
    const KernelPlan& plan = context_.plan;
    const std::optional<graph::KernelLaunchCounts> walk =
        plan.launchCounts ? std::optional(graph::kernelLaunchCounts(*plan.graph, *plan.kernel))
                          : std::nullopt;
    for (int axis = 0; axis < graph::kGridAxes; ++axis) {
      const graph::LaunchCount* c = walk ? &walk->grid[axis] : nullptr;
      count[axis] = c && !c->isStatic() ? "(" + context_.count(*c) + ")" : str(block.grid[axis]);
    }
    const int64_t group = wg_.rasterGroup;
    if (walk) {
      // In a scope of its own: the producer and the consumers each open the walk.
      out_.open("");
      out_.line("const int mg_gx = " + count[0] + ", mg_gy = " + count[1] + ";");
      out_.line("const int mg_tiles = mg_gx * mg_gy * " + count[2] + ";");
      count[0] = "mg_gx";
      count[1] = "mg_gy";
    }
    const std::string tiles =
        walk ? "mg_tiles" : str(block.grid[0] * block.grid[1] * block.grid[2]);
    const std::string inGridTiles = walk ? "(mg_gx * mg_gy)" : str(block.grid[0] * block.grid[1]);
    const std::string groupTiles =
        walk ? "(" + str(group) + " * mg_gy)" : str(group * block.grid[1]);
    out_.open("for (int tile = blockIdx.x; tile < " + tiles + "; tile += gridDim.x)");
    out_.line("const int bz = tile / " + inGridTiles + ";");
    out_.line("const int inGrid = tile % " + inGridTiles + ";");
    out_.line("const int first = inGrid / " + groupTiles + " * " + str(group) + ";");
    out_.line("const int width = " + count[0] + " - first < " + str(group) + " ? " + count[0] +
              " - first : " + str(group) + ";");
    out_.line("const int bx = first + inGrid % " + groupTiles + " % width;");
    out_.line("const int by = inGrid % " + groupTiles + " / width;");
    out_.line("(void)bz;");
  }
  void closeTiles() {
    out_.close();
    if (wg_.persistent && context_.plan.launchCounts) out_.close();  // the walk's own scope
  }
  std::string type() const { return storageType(wg_.dtype); }

  bool gathers() const { return wg_.a.gatherChunkBytes > 0 || wg_.b.gatherChunkBytes > 0; }

  // One stage's copy-engine copies for iteration `iteration` into stage `stage` (one thread).
  void emitIssue(const std::string& iteration, const std::string& stage) {
    const std::string full = ring_.fullBarrier(stage);
    int64_t bytes = 0;
    for (const BulkOperand* op : {&wg_.a, &wg_.b}) {
      if (op->gatherChunkBytes == 0) bytes += op->boxBytes * op->boxes;
    }
    ring_.expectBytes(full, bytes);
    const std::string prefix = ring_.stageBase(stage) + " + ";
    for (const BulkOperand* op : {&wg_.a, &wg_.b}) {
      if (op->gatherChunkBytes == 0) ring_.loadBoxes(*op, prefix, op->offset, full, iteration);
    }
  }

  // A copy warpgroup of which every thread gathers its chunks of each stage (with the copy
  // engine's copies, issued by thread 0, for an operand it can address). A thread's chunks of
  // stage g are made visible and counted on the stage's `full` barrier once `lag` later
  // stages are in flight: at most the stages less two, so that the stage whose release the
  // copies wait on has always been announced (the consumers release a stage once the next
  // one has filled).
  void emitGatheringProducer() {
    const int lag = std::max(0, wg_.stages - 2);
    const std::string stages = str(wg_.stages);
    out_.line("int g = 0;  // iterations issued so far, over every tile of this block");
    openTiles();
    out_.open("for (int it = 0; it < " + str(context_.block().forloop) + "; ++it, ++g)");
    ring_.acquireStage("g");
    if (wg_.a.gatherChunkBytes == 0 || wg_.b.gatherChunkBytes == 0) {
      out_.open("if (threadIdx.x == 0)");
      emitIssue("it", "s");
      out_.close();
    }
    for (const BulkOperand* op : {&wg_.a, &wg_.b}) {
      if (op->gatherChunkBytes == 0) continue;
      const graph::BlockOp& input = context_.block().ops[op->op];
      ring_.gatherBoxes(*op, ring_.stageBase("s"), "it",
                        context_.paramName(context_.kernel.inputParams[input.kernelTensor]));
    }
    out_.line("mg::cp_async_commit();");
    out_.line("if (g >= " + str(lag) + ") mg::gathered_stage_landed<" + str(lag) + ">(" +
              ring_.fullBarrier("(g - " + str(lag) + ") % " + stages) + ");");
    out_.close();
    closeTiles();
    if (lag > 0) {
      out_.line("for (int d = g < " + str(lag) + " ? 0 : g - " + str(lag) +
                "; d < g; ++d) mg::gathered_stage_landed<0>(" + ring_.fullBarrier("d % " + stages) +
                ");");
    }
  }

  // The multiplying warpgroup(s): per tile (opened here when `opensTiles`), the loop over
  // stages, then the epilogue. `g` counts iterations over all of the block's tiles, so the
  // stage ring and its phases run on from one tile to the next.
  void emitConsumer(const std::string& consumerIndex, bool opensTiles) {
    const int stages = wg_.stages;
    const int64_t forloop = context_.block().forloop;
    const int64_t rowsPerConsumer = wg_.m / wg_.consumers;
    const int64_t wgmmaRows = wg_.limits.wgmmaRows;
    const int accumulators = static_cast<int>(wg_.n / 2);
    ring_.declareConsumerThread(consumerIndex);
    out_.line("int g = 0;");
    if (opensTiles) openTiles();
    out_.line("float acc[" + str(wg_.mTiles) + "][" + str(accumulators) + "];");
    out_.line("#pragma unroll");
    out_.open("for (int t = 0; t < " + str(wg_.mTiles) + "; ++t)");
    out_.line("#pragma unroll");
    out_.line("for (int f = 0; f < " + str(accumulators) + "; ++f) acc[t][f] = 0.0f;");
    out_.close();
    out_.open("for (int it = 0; it < " + str(forloop) + "; ++it, ++g)");
    ring_.waitStage("g");
    out_.line("const unsigned char* const stage = " + ring_.stageBase("s") + ";");
    out_.line("const int rows0 = consumer * " + str(rowsPerConsumer) + ";");
    const std::string aRows =
        wg_.a.kMajor ? "rows0 * " + str(wg_.limits.swizzleRowBytes)
                     : "(rows0 / " + str(wg_.a.view.box[0]) + ") * " + str(wg_.a.boxBytes);
    out_.line("const unsigned char* const aBase = stage + " + str(wg_.a.offset) + " + (" + aRows +
              ");");
    out_.line("const unsigned char* const bBase = stage + " + str(wg_.b.offset) + ";");
    out_.line("mg::wgmma_fence();");
    const std::string call = "mg::wgmma_" + ring_.wgmmaShape(wg_.n) + "<" +
                             (wg_.a.kMajor ? "0" : "1") + ", " + (wg_.b.kMajor ? "0" : "1") + ">";
    for (int kk = 0; kk < wg_.k / 16; ++kk) {
      const std::string b = ring_.descriptor(wg_.b, "bBase", 0, kk);
      for (int t = 0; t < wg_.mTiles; ++t) {
        const std::string a = ring_.descriptor(wg_.a, "aBase", t * wgmmaRows, kk);
        out_.line(call + "(acc[" + str(t) + "], " + a + ", " + b + ", static_cast<const " + type() +
                  "*>(nullptr));");
      }
    }
    out_.line("mg::wgmma_commit_group();");
    out_.line("// The previous stage's multiplies are done: release its buffer.");
    out_.line("mg::wgmma_wait_group<1>();");
    ring_.releaseStage("g - 1", "it > 0");
    if (!wg_.producer && forloop > stages) {
      out_.open("if (threadIdx.x == 0 && it > 0 && it - 1 + " + str(stages) + " < " + str(forloop) +
                ")");
      out_.line("const int refill = it - 1 + " + str(stages) + ";");
      ring_.acquireStage("refill", "r");
      emitIssue("refill", "r");
      out_.close();
    }
    out_.close();
    out_.line("mg::wgmma_wait_group<0>();");
    out_.line("#pragma unroll");
    out_.line("for (int t = 0; t < " + str(wg_.mTiles) +
              "; ++t) mg::wgmma_fence_operands(acc[t]);");
    ring_.releaseStage("g - 1");
    if (!wg_.epilogueOps.empty()) {
      ring_.applyElementwiseOps(wg_.accumulatorOp, wg_.epilogueOps, wg_.epilogueInputs,
                                wg_.outputOp, "acc[t]", wg_.mTiles, wg_.n, rowsPerConsumer);
    }
    ring_.storeAccumulators(wg_.outputOp, "acc[t]", wg_.mTiles, wg_.n, rowsPerConsumer);
    if (opensTiles) closeTiles();
  }

  const EmitContext& context_;
  CudaWriter& out_;
  const WarpgroupMmaPlan& wg_;
  WarpgroupPrinter ring_;
};

}  // namespace

void emitWarpgroupGemmBody(const EmitContext& context) {
  GemmEmitter(context).emit();
}

}  // namespace mugraph::codegen
