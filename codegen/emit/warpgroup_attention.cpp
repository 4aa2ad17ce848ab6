// Attention planned on the sm_90 warpgroup path (plan/paths/warpgroup_attention_plan.h):
// warpgroup 0 copies Q once and K and V through the ring (warpgroup_printer.h); each
// consumer warpgroup runs S = Q·K by wgmma, the chain of ops on S and its rows in registers
// (the online softmax), O rescaled by its running max's factor, then O += P·V by wgmma with
// P packed from registers, and stores O after the loop.
#include "codegen/emit/attention_chain.h"
#include "codegen/emit/warpgroup_printer.h"

namespace mugraph::codegen {
namespace {

// Per consumer warpgroup and iteration: S = Q·K into `kv / 2` accumulators, the chain of ops on S
// and its rows in registers, O rescaled by its factor, then O += P·V with P packed from registers.
class AttentionEmitter {
 public:
  explicit AttentionEmitter(const EmitContext& context)
      : context_(context),
        out_(context.out),
        at_(*context.plan.as<plan::WarpgroupAttentionPlan>()),
        block_(context.block()),
        ring_(context, at_, at_.dtype),
        chain_(context, at_) {}

  void emit() {
    ring_.declareRing({"qFull"});
    // Causal: the query blocks run longest first (their rows see the most keys), so the short
    // ones fill the last wave instead of leaving it to a few long ones.
    std::string index[graph::kGridAxes] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
    const int mask = causalMaskOp();
    if (mask >= 0) {
      const graph::DimSplit& rows = context_.plan.splits.at(block_.ops[mask].inputs[0]).end()[-2];
      if (rows.gridAxis != graph::kReplicated) index[rows.gridAxis] = longestFirst(mask, rows);
    }
    out_.line("const int bx = " + index[0] + ", by = " + index[1] + ", bz = " + index[2] + ";");
    out_.line("(void)bx; (void)by; (void)bz;");
    ring_.initializeRing({"qFull"});
    out_.open("if (warpgroup == 0)");
    ring_.setmaxnreg(true);
    out_.open("if (threadIdx.x == 0)");
    ring_.expectBytes("qFull", at_.q.boxBytes * at_.q.boxes);
    ring_.loadBoxes(at_.q, "mg_smem + " + str(at_.q.offset) + " + ", 0, "qFull", "0");
    openIterations();
    ring_.acquireStage("it");
    out_.line("unsigned char* const stage = " + ring_.stageBase("s") + ";");
    const std::string full = ring_.fullBarrier("s");
    ring_.expectBytes(full, at_.k.boxBytes * at_.k.boxes + at_.v.boxBytes * at_.v.boxes);
    ring_.loadBoxes(at_.k, "stage + " + str(at_.k.offset) + " + ", 0, full, "it");
    ring_.loadBoxes(at_.v, "stage + " + str(at_.v.offset) + " + ", 0, full, "it");
    out_.close();
    out_.close();
    out_.reopen("else");
    ring_.setmaxnreg(false);
    emitConsumer();
    out_.close();
  }

 private:
  std::string name(graph::TensorId t) const { return chain_.name(t); }
  int64_t width(plan::FragmentRole role) const { return chain_.width(role); }
  int causalMaskOp() const { return chain_.causalMaskOp(); }
  std::string causalRows(int mask) const { return chain_.causalRows(mask); }
  std::string causalShape(int mask) const { return chain_.causalShape(mask); }

  // The loop over iterations, copies and multiplies alike; a block whose last part holds fewer
  // real iterations stops after them (graph/tile_splits.h).
  void openIterations() {
    const std::optional<graph::DimSplit>& loop = context_.plan.shortenedLoop;
    const bool shortened =
        loop &&
        declareBlockIterations(
            context_, loop->gridAxis == graph::kReplicated ? "0" : kWarpgroupTile[loop->gridAxis]);
    const int mask = causalMaskOp();
    if (mask >= 0) {
      out_.line("const int mg_causal_iterations = mg::causal_iterations(" + causalRows(mask) +
                ", " + context_.tileStart(block_.ops[mask].inputs[0], graph::kMaxRank - 1, "0") +
                ", " + str(at_.kv) + ", " + causalShape(mask) + ", " + context_.forloop() + ");");
    }
    out_.open("for (int it = 0; it < " + context_.forloop() + "; ++it)");
    if (shortened) out_.line("if (it >= mg_iterations) break;");
    if (mask >= 0) out_.line("if (it >= mg_causal_iterations) break;");
  }

  // The consumers' overlapped loop with its first iteration peeled: that one has no P·V to
  // issue, and every later one issues its predecessor's unconditionally. (ptxas follows wgmma
  // groups through straight code only: a P·V issued under a branch inside the loop made it
  // wait for every multiply before the softmax.) Opens "if (first iteration runs)" with `it`
  // 0, and records the run-time limits the later iterations stop at.
  void openPeeledIteration() {
    const std::optional<graph::DimSplit>& loop = context_.plan.shortenedLoop;
    const bool shortened =
        loop &&
        declareBlockIterations(
            context_, loop->gridAxis == graph::kReplicated ? "0" : kWarpgroupTile[loop->gridAxis]);
    const int mask = causalMaskOp();
    std::vector<std::string> limits;
    if (shortened) limits.push_back("mg_iterations");
    if (mask >= 0) {
      out_.line("const int mg_causal_iterations = mg::causal_iterations(" + causalRows(mask) +
                ", " + context_.tileStart(block_.ops[mask].inputs[0], graph::kMaxRank - 1, "0") +
                ", " + str(at_.kv) + ", " + causalShape(mask) + ", " + context_.forloop() + ");");
      limits.push_back("mg_causal_iterations");
    }
    std::string runs = "true";
    for (const std::string& limit : limits) {
      runs = runs == "true" ? limit + " > 0" : runs + " && " + limit + " > 0";
    }
    out_.open("if (" + runs + ")");
    out_.line("const int it = 0;");
    loopLimits_ = limits;
  }

  // The query block a CTA of the q-row grid axis computes, longest first. Where queries=q
  // stacks several sequences in the rows (GQA's folded query heads) and the block tile divides
  // q, block b takes sequence b mod n, at position P - 1 - b / n from its start (P blocks a
  // sequence): the last blocks of every sequence first, then the ones before them. Otherwise
  // the axis is reversed.
  std::string longestFirst(int mask, const graph::DimSplit& rows) const {
    const std::string b = "blockIdx." + std::string(1, "xyz"[rows.gridAxis]);
    const int64_t queries = block_.ops[mask].attrs.queries;
    if (queries > 0 && queries < rows.extent && queries % rows.blockTile == 0 &&
        rows.extent % queries == 0) {
      const std::string sequences = str(rows.extent / queries);
      const std::string perSequence = str(queries / rows.blockTile);
      return "(" + b + " % " + sequences + ") * " + perSequence + " + (" + perSequence + " - 1 - " +
             b + " / " + sequences + ")";
    }
    return "gridDim." + std::string(1, "xyz"[rows.gridAxis]) + " - 1 - " + b;
  }

  // The accumulator op reading the second matmul's result (it is folded into the wgmma).
  int outputAccumulator() const {
    return context_.plan.consumers[block_.ops[at_.secondMatmulOp].output][0];
  }

  void emitConsumer() {
    const KernelPlan& plan = context_.plan;
    ring_.declareConsumerThread("warpgroup - 1");
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
    const plan::WarpgroupLimits& limits = at_.limits;
    const std::string qRows =
        at_.q.kMajor ? "consumer * " + str(limits.wgmmaRows) + " * " + str(limits.swizzleRowBytes)
                     : "consumer * " + str(at_.q.boxBytes);
    out_.line("const unsigned char* const qBase = mg_smem + " + str(at_.q.offset) + " + (" + qRows +
              ");");
    if (takesTurns()) {
      out_.line("const mg::Turns<" + str(at_.consumers) + ", " + str(at_.limits.threads) +
                "> turns{consumer};");
    }
    if (at_.overlapped) {
      // P (packed for wgmma) of even and of odd iterations, each the operand of the P·V the
      // next iteration issues; and the previous iteration's V tile. Two buffers: the one being
      // written never holds registers the multiply in flight reads, so ptxas has no reason to
      // wait for that multiply before the softmax that fills the other.
      out_.line("unsigned packed0[" + str(at_.kv / 16) + "][4], packed1[" + str(at_.kv / 16) +
                "][4];");
      out_.line("const unsigned char* vPrevious = nullptr;");
      out_.line("int previous = -1;");
      openPeeledIteration();
      peeled_ = true;
      emitIteration(plan, "", "packed0");
      peeled_ = false;
      out_.close();
      // The rest two at a time, odd then even.
      out_.open("for (int pair = 1; pair < " + context_.forloop() + "; pair += 2)");
      for (int half = 0; half < 2; ++half) {
        out_.open("");
        out_.line("const int it = pair + " + str(half) + ";");
        out_.line("if (it >= " + context_.forloop() + ") break;");
        for (const std::string& limit : loopLimits_) out_.line("if (it >= " + limit + ") break;");
        emitIteration(plan, half == 0 ? "packed0" : "packed1", half == 0 ? "packed1" : "packed0");
        out_.close();
      }
      out_.close();
      out_.line("// The last tile's P·V.");
      out_.open("if (previous >= 0)");
      finishPreviousProduct();
      if (takesTurns()) out_.line("turns.wait();");
      out_.line("mg::wgmma_fence();");
      out_.open("if (previous % 2 == 0)");
      issueSecondMatmul("packed0");
      out_.reopen("else");
      issueSecondMatmul("packed1");
      out_.close();
      // The last consumer's last turn opens none: every barrier gets as many arrivals as waits.
      if (takesTurns()) out_.line("if (consumer != " + str(at_.consumers - 1) + ") turns.pass();");
      out_.line("mg::wgmma_wait_group<0>();");
      ring_.releaseStage("previous");
      out_.close();
      // Again on every path: where the loop may not run at all (a causal block above the
      // diagonal, a shortened loop), ptxas sees a path with a P·V in flight past the block
      // above, and would serialize every wgmma of the kernel (C7514) to guard O's reads.
      out_.line("mg::wgmma_wait_group<0>();");
      out_.line("mg::wgmma_fence_operands(" + name(block_.ops[outputAccumulator()].output) + ");");
    } else {
      openIterations();
      emitIteration(plan, "", "packed");
      out_.close();
    }
    for (size_t o = 0; o < block_.ops.size(); ++o) {
      const int index = static_cast<int>(o);
      const graph::BlockOp& op = block_.ops[o];
      if (op.kind == graph::OpKind::Input || op.kind == graph::OpKind::Output) continue;
      if (plan::runsInLoop(plan, index)) continue;
      emitOp(index);
    }
    const graph::TensorId result = block_.ops[at_.outputOp].inputs[0];
    ring_.storeAccumulators(at_.outputOp, name(result), 1, at_.dv, limits.wgmmaRows);
  }

  // One iteration's body: its stage, the ops in the loop, and its bookkeeping.
  // `from`: P of the previous iteration (overlapped), `into`: this one's.
  void emitIteration(const KernelPlan& plan, const std::string& from, const std::string& into) {
    packedFrom_ = from;
    packedInto_ = into;
    // The P·V issued by the previous iteration has landed before O is rescaled for the one
    // this iteration issues. Waiting here, at the top, leaves the whole softmax of the
    // previous iteration under that multiply: a wait after the softmax in the same block is
    // one ptxas's scheduler hoists into it.
    if (at_.overlapped && !peeled_) finishPreviousProduct();
    ring_.waitStage("it");
    out_.line("const unsigned char* const stage = " + ring_.stageBase("s") + ";");
    declareRealExtents(context_, true);
    out_.line("const unsigned char* const kBase = stage + " + str(at_.k.offset) + ";");
    out_.line("const unsigned char* const vBase = stage + " + str(at_.v.offset) + ";");
    // Inputs in S's layout first: their loads are in flight while S is multiplied.
    for (int input : at_.scoreInputs) chain_.loadScoreInput(input);
    for (size_t o = 0; o < block_.ops.size(); ++o) {
      const int index = static_cast<int>(o);
      const graph::BlockOp& op = block_.ops[o];
      if (op.kind == graph::OpKind::Input || op.kind == graph::OpKind::Output) continue;
      if (!plan::runsInLoop(plan, index)) continue;
      emitOp(index);
    }
    if (at_.overlapped) {
      out_.line("vPrevious = vBase;");
      out_.line("previous = it;");
    } else {
      ring_.releaseStage("it");
    }
  }

  void emitOp(int index) {
    const graph::BlockOp& op = block_.ops[index];
    out_.line("// " + std::string(graph::opName(op.kind)) + " -> " +
              block_.tensors[op.output].name);
    if (index == at_.firstMatmulOp) {
      emitFirstMatmul(op);
    } else if (index == at_.secondMatmulOp) {
      emitSecondMatmul(op);
    } else {
      chain_.emitOp(index);
    }
    // The O accumulator is updated by the second matmul's wgmma (emitSecondMatmul).
  }

  void emitFirstMatmul(const graph::BlockOp& op) {
    const std::string s = name(op.output);
    // No zeroing: the first k-step overwrites the accumulators (ScaleD = 0).
    out_.line("float " + s + "[" + str(at_.kv / 2) + "];");
    // Consumer 0 takes the first turn unasked.
    if (takesTurns()) out_.line("if (consumer != 0 || it != 0) turns.wait();");
    out_.line("mg::wgmma_fence();");
    const std::string call = "mg::wgmma_" + ring_.wgmmaShape(at_.kv) + "<" +
                             (at_.q.kMajor ? "0" : "1") + ", " + (at_.k.kMajor ? "0" : "1");
    for (int kk = 0; kk < at_.d / at_.limits.wgmmaK; ++kk) {
      out_.line(call + (kk == 0 ? ", 0>" : ">") + "(" + s + ", " +
                ring_.descriptor(at_.q, "qBase", 0, kk) + ", " +
                ring_.descriptor(at_.k, "kBase", 0, kk) + ", static_cast<const " +
                storageType(at_.dtype) + "*>(nullptr));");
    }
    out_.line("mg::wgmma_commit_group();");
    if (at_.overlapped) {
      // The previous tile's P·V runs while this one's softmax is computed: each in a group of
      // its own, so that waiting for all but the newest group waits for S alone.
      if (!peeled_) issueSecondMatmul(packedFrom_);
      if (takesTurns()) out_.line("turns.pass();");
      out_.line(peeled_ ? "mg::wgmma_wait_group<0>();" : "mg::wgmma_wait_group<1>();");
    } else {
      out_.line("mg::wgmma_wait_group<0>();");
    }
    out_.line("mg::wgmma_fence_operands(" + s + ");");
  }

  // Whether the consumers take turns issuing their multiplies (mg::Turns): in the overlapped
  // loop of two or more consumers, where one's softmax can run under another's multiplies.
  bool takesTurns() const { return at_.overlapped && at_.consumers >= 2; }

  // O += P·V from `packed` and the V tile at vBase (overlapped: vPrevious), committed.
  void issueSecondMatmul(const std::string& packed) {
    const std::string o = name(block_.ops[outputAccumulator()].output);
    const std::string v = at_.overlapped ? "vPrevious" : "vBase";
    const std::string call =
        "mg::wgmma_" + ring_.wgmmaShape(at_.dv) + "_rs<" + (at_.v.kMajor ? "0" : "1") + ">";
    for (int kk = 0; kk < at_.kv / 16; ++kk) {
      out_.line(call + "(" + o + ", " + packed + "[" + str(kk) + "], " +
                ring_.descriptor(at_.v, v, 0, kk) + ", static_cast<const " +
                storageType(at_.dtype) + "*>(nullptr));");
    }
    out_.line("mg::wgmma_commit_group();");
  }

  void emitSecondMatmul(const graph::BlockOp& op) {
    const graph::BlockOp& acc = block_.ops[outputAccumulator()];
    const std::string o = name(acc.output);
    const std::string p = name(op.inputs[0]);
    if (!at_.overlapped && acc.kind == graph::OpKind::AccumRescaledSum) {
      out_.line("#pragma unroll");
      out_.line("for (int f = 0; f < " + str(at_.dv / 2) + "; ++f) " + o +
                "[f] *= " + name(acc.inputs[1]) + "_factor[(f >> 1) & 1];");
    }
    // P's columns [16 kk, 16 kk + 16) are S's accumulators 8 kk .. 8 kk + 7, packed in pairs.
    if (!at_.overlapped) out_.line("unsigned packed[" + str(at_.kv / 16) + "][4];");
    out_.line("#pragma unroll");
    out_.open("for (int kk = 0; kk < " + str(at_.kv / 16) + "; ++kk)");
    out_.line("#pragma unroll");
    out_.line("for (int r = 0; r < 4; ++r) " + packedInto_ + "[kk][r] = mg::pack2<" +
              storageType(at_.dtype) + ">(" + p + "[8 * kk + 2 * r], " + p +
              "[8 * kk + 2 * r + 1]);");
    out_.close();
    if (at_.overlapped) {
      // Issued by the next iteration, or after the loop; P is final here: pinned, so that the
      // compiler moves none of its definitions past that iteration's wgmma fence (ptxas would
      // then serialize every wgmma of the loop). O is rescaled there, once the P·V in flight
      // has landed (finishPreviousProduct).
      out_.line("mg::wgmma_fence_operands(" + packedInto_ + ");");
      return;
    }
    out_.line("mg::wgmma_fence();");
    issueSecondMatmul("packed");
    out_.line("mg::wgmma_wait_group<0>();");
    out_.line("mg::wgmma_fence_operands(" + o + ");");
  }

  // The overlapped loop, before iteration `previous + 1` issues the P·V of `previous`: the
  // P·V of `previous - 1` has landed (its stage is free), and O is rescaled by the running
  // max's factor of `previous` (online softmax: O = O f + P V).
  void finishPreviousProduct() {
    const graph::BlockOp& acc = block_.ops[outputAccumulator()];
    const std::string o = name(acc.output);
    out_.line("mg::wgmma_wait_group<0>();");
    out_.line("mg::wgmma_fence_operands(" + o + ");");
    ring_.releaseStage("previous - 1", "previous >= 1");
    if (acc.kind == graph::OpKind::AccumRescaledSum) {
      out_.line("#pragma unroll");
      out_.line("for (int f = 0; f < " + str(at_.dv / 2) + "; ++f) " + o +
                "[f] *= " + name(acc.inputs[1]) + "_factor[(f >> 1) & 1];");
    }
    out_.line("mg::wgmma_fence_operands(" + o + ");");
  }

  bool peeled_ = false;                  // emitting the overlapped loop's peeled first iteration
  std::vector<std::string> loopLimits_;  // run-time iteration limits (shortened, causal)
  std::string packedFrom_, packedInto_;  // P's buffers of the iteration being emitted
  const EmitContext& context_;
  CudaWriter& out_;
  const plan::WarpgroupAttentionPlan& at_;
  const graph::BlockGraph& block_;
  WarpgroupPrinter ring_;
  AttentionChain chain_;
};

}  // namespace

void emitWarpgroupAttentionBody(const EmitContext& context) {
  // Every position this path prints follows its block index names (bx, by, bz).
  EmitContext named = context;
  named.blockIndex = kWarpgroupTile;
  AttentionEmitter(named).emit();
}

}  // namespace mugraph::codegen
