// Attention planned on the sm_90 warpgroup path (plan/paths/warpgroup_attention_plan.h):
// warpgroup 0 copies Q once and K and V through the ring (warpgroup_printer.h); each
// consumer warpgroup runs S = Q·K by wgmma, the chain of ops on S and its rows in registers
// (the online softmax), O rescaled by its running max's factor, then O += P·V by wgmma with
// P packed from registers, and stores O after the loop.
#include "codegen/emit/warpgroup_printer.h"

namespace mugraph::codegen {
namespace {

std::string str(int64_t value) {
  return std::to_string(value);
}

// Per consumer warpgroup and iteration: S = Q·K into `kv / 2` accumulators, the chain of ops on S
// and its rows in registers, O rescaled by its factor, then O += P·V with P packed from registers.
class AttentionEmitter {
 public:
  explicit AttentionEmitter(const EmitContext& context)
      : context_(context),
        out_(context.out),
        at_(*context.plan.as<plan::WarpgroupAttentionPlan>()),
        block_(context.block()),
        ring_(context, at_, at_.dtype) {}

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
  std::string name(graph::TensorId t) const { return "t" + std::to_string(t); }

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
                ", " + str(at_.kv) + ", " + causalShape(mask) + ", " + str(block_.forloop) + ");");
    }
    out_.open("for (int it = 0; it < " + str(block_.forloop) + "; ++it)");
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
                ", " + str(at_.kv) + ", " + causalShape(mask) + ", " + str(block_.forloop) + ");");
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

  // The causal_mask op on S, or -1: with it the loop stops after the last key tile below the
  // diagonal, and only tiles across it are masked.
  int causalMaskOp() const {
    for (size_t o = 0; o < block_.ops.size(); ++o) {
      const graph::BlockOp& op = block_.ops[o];
      if (op.kind == graph::OpKind::CausalMask && at_.roles[op.output] == plan::FragmentRole::S) {
        return static_cast<int>(o);
      }
    }
    return -1;
  }
  // "first, last": the block's query rows in the whole row dim.
  std::string causalRows(int mask) const {
    const graph::TensorId tile = block_.ops[mask].inputs[0];
    const graph::DimSplit& rows = context_.plan.splits.at(tile).end()[-2];
    const std::string first = context_.tileStart(tile, graph::kMaxRank - 2, "0");
    return first + ", min(" + first + " + " + str(at_.rows) + ", " + str(rows.extent) + ") - 1";
  }
  // "cols, queries" of the mask (graph/ops.h).
  std::string causalShape(int mask) const {
    const graph::BlockOp& op = block_.ops[mask];
    const graph::TileSplit& split = context_.plan.splits.at(op.inputs[0]);
    const int64_t rows = split.end()[-2].extent;
    return str(split.back().extent) + ", " + str(op.attrs.queries > 0 ? op.attrs.queries : rows);
  }

  // causal_mask on S: a copy where the tile is below the diagonal, the mask across it.
  void emitCausalMask(int index) {
    const graph::BlockOp& op = block_.ops[index];
    const std::string x = name(op.inputs[0]);
    const std::string result = name(op.output);
    const std::string colStart = context_.tileStart(op.inputs[0], graph::kMaxRank - 1, "it");
    out_.open("if (mg::causal_tile_kept(" + causalRows(index) + ", " + colStart + ", " +
              str(at_.kv) + ", " + causalShape(index) + "))");
    out_.line("#pragma unroll");
    out_.line("for (int f = 0; f < " + str(at_.kv / 2) + "; ++f) " + result + "[f] = " + x +
              "[f];");
    out_.reopen("else");
    const std::string row = "consumer * " + str(at_.limits.wgmmaRows) +
                            " + warp * 16 + (lane >> 2) + ((f >> 1) & 1) * 8";
    const std::string col = "(f >> 2) * 8 + ((lane & 3) << 1) + (f & 1)";
    out_.line("#pragma unroll");
    out_.line("for (int f = 0; f < " + str(at_.kv / 2) + "; ++f) " + result +
              "[f] = " + context_.causalMask(op, x + "[f]", row, col, "it") + ";");
    out_.close();
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

  bool isAccumulator(int op) const { return graph::isAccumulator(block_.ops[op].kind); }

  // Scales folded into the exponent (FA3's exp2 with log2 e in the scale). An S tile that is
  // scale(x, c) with c > 0 is held as x itself when every use can take it unscaled: a row max
  // (scaled after the reduction), a causal mask (which commutes with the scale), or the
  // difference x - r with a row whose only use is an exp, computed inside that exp as one
  // fused multiply-add. Anything else needs the scaled values, and gets them as before.
  static constexpr double kLog2e = 1.4426950408889634;

  // Whether op `index` is such a scale, its result held unscaled.
  bool heldUnscaled(int index) const {
    const graph::BlockOp& op = block_.ops[index];
    return op.kind == graph::OpKind::Scale && op.attrs.scale > 0 &&
           at_.roles[op.output] == plan::FragmentRole::S &&
           at_.roles[op.inputs[0]] == plan::FragmentRole::S && deferrable(op.output);
  }

  bool deferrable(graph::TensorId t) const {
    for (int consumer : context_.plan.consumers[t]) {
      const graph::BlockOp& op = block_.ops[consumer];
      if (op.kind == graph::OpKind::ReduceMax) continue;
      if (op.kind == graph::OpKind::CausalMask && deferrable(op.output)) continue;
      if (op.kind == graph::OpKind::Sub && op.inputs[0] == t && foldedIntoExp(consumer)) continue;
      return false;
    }
    return true;
  }

  // Whether op `index` is x - r (x an S tile, r a row) whose only use is one exp.
  bool foldedIntoExp(int index) const {
    const graph::BlockOp& op = block_.ops[index];
    if (op.kind != graph::OpKind::Sub || at_.roles[op.inputs[0]] != plan::FragmentRole::S ||
        at_.roles[op.inputs[1]] != plan::FragmentRole::Row) {
      return false;
    }
    const std::vector<int>& uses = context_.plan.consumers[op.output];
    return uses.size() == 1 && block_.ops[uses[0]].kind == graph::OpKind::Exp;
  }

  // The factor by which S tile `t`'s array falls short of its value (1 where it is held as is).
  double unscaledBy(graph::TensorId t) const {
    const int producer = context_.plan.producer[t];
    if (producer < 0) return 1.0;
    const graph::BlockOp& op = block_.ops[producer];
    if (heldUnscaled(producer)) return op.attrs.scale * unscaledBy(op.inputs[0]);
    if (op.kind == graph::OpKind::CausalMask) return unscaledBy(op.inputs[0]);
    return 1.0;
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
      out_.open("for (int pair = 1; pair < " + str(block_.forloop) + "; pair += 2)");
      for (int half = 0; half < 2; ++half) {
        out_.open("");
        out_.line("const int it = pair + " + str(half) + ";");
        out_.line("if (it >= " + str(block_.forloop) + ") break;");
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
    ring_.storeAccumulators(at_.outputOp, name(result), 1, at_.d, limits.wgmmaRows);
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
    const plan::FragmentRole role = at_.roles[op.output];
    out_.line("// " + std::string(graph::opName(op.kind)) + " -> " +
              block_.tensors[op.output].name);
    if (index == at_.firstMatmulOp) {
      emitFirstMatmul(op);
    } else if (index == at_.secondMatmulOp) {
      emitSecondMatmul(op);
    } else if (graph::isElementwise(op.kind)) {
      if (heldUnscaled(index)) {
        out_.line("float (&" + name(op.output) + ")[" + str(width(role)) + "] = " +
                  name(op.inputs[0]) + ";  // held unscaled: the scale is folded into exp");
        return;
      }
      if (foldedIntoExp(index)) {
        out_.line("// computed in its exp");
        return;
      }
      std::vector<std::string> operands;
      for (graph::TensorId t : op.inputs) operands.push_back(operand(t, role));
      out_.line("float " + name(op.output) + "[" + str(width(role)) + "];");
      const int difference =
          op.kind == graph::OpKind::Exp ? context_.plan.producer[op.inputs[0]] : -1;
      if (op.kind == graph::OpKind::CausalMask) {
        emitCausalMask(index);
      } else if (difference >= 0 && foldedIntoExp(difference)) {
        // e^(c x - r) as 2^(x (c log2 e) - r log2 e): one fused multiply-add before the
        // special-function unit, where scale, subtract and exp took three instructions.
        const graph::BlockOp& sub = block_.ops[difference];
        const double factor = unscaledBy(sub.inputs[0]) * kLog2e;
        const std::string shift = name(op.output) + "_shift";
        out_.line("const float " + shift + "[2] = {" + name(sub.inputs[1]) + "[0] * " +
                  floatLiteral(kLog2e) + ", " + name(sub.inputs[1]) + "[1] * " +
                  floatLiteral(kLog2e) + "};");
        out_.line("#pragma unroll");
        out_.line("for (int f = 0; f < " + str(width(role)) + "; ++f) " + name(op.output) +
                  "[f] = mg::exp2_approx(fmaf(" + name(sub.inputs[0]) + "[f], " +
                  floatLiteral(factor) + ", -" + shift + "[(f >> 1) & 1]));");
      } else if (op.kind == graph::OpKind::Div && role != plan::FragmentRole::Row &&
                 at_.roles[op.inputs[1]] == plan::FragmentRole::Row) {
        // By a row (the softmax's sum): one reciprocal per row, then products, where a
        // division per element took the slow path's checks each.
        const std::string inverse = name(op.output) + "_inverse";
        const std::string row = name(op.inputs[1]);
        out_.line("const float " + inverse + "[2] = {1.0f / " + row + "[0], 1.0f / " + row +
                  "[1]};");
        out_.line("#pragma unroll");
        out_.line("for (int f = 0; f < " + str(width(role)) + "; ++f) " + name(op.output) +
                  "[f] = " + operand(op.inputs[0], role) + " * " + inverse + "[(f >> 1) & 1];");
      } else {
        out_.line("#pragma unroll");
        out_.line("for (int f = 0; f < " + str(width(role)) + "; ++f) " + name(op.output) +
                  "[f] = " + elementwiseExpression(op.kind, op.attrs, operands) + ";");
      }
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
      // A tree over the thread's kv / 4 values of the row, then over the quad: a chain of
      // kv / 4 dependent instructions left the warp waiting on each one's latency.
      const auto reduce = [&](bool guarded) {
        const std::string value = guarded ? "(j * 8 + ((lane & 3) << 1) + c < " + real + " ? " +
                                                term + " : mg::negative_infinity())"
                                          : term;
        const auto combine = [&](const std::string& a, const std::string& b) {
          return max ? "mg::max_of(" + a + ", " + b + ")" : a + " + " + b;
        };
        out_.line("#pragma unroll");
        out_.open("for (int h = 0; h < 2; ++h)");
        out_.line("float part[" + str(at_.kv / 8) + "];");
        out_.line("#pragma unroll");
        out_.open("for (int j = 0; j < " + str(at_.kv / 8) + "; ++j)");
        out_.open("");
        out_.line("const int c = 0;");
        out_.line("part[j] = " + value + ";");
        out_.close();
        out_.open("");
        out_.line("const int c = 1;");
        out_.line("part[j] = " + combine("part[j]", value) + ";");
        out_.close();
        out_.close();
        for (int64_t w = at_.kv / 16; w > 0; w /= 2) {
          std::string level;
          for (int64_t j = 0; j < w; ++j) {
            const std::string a = "part[" + str(j) + "]", b = "part[" + str(j + w) + "]";
            level += (j == 0 ? "" : " ") + a + " = " + combine(a, b) + ";";
          }
          out_.line(level);
        }
        out_.line("float v = part[0];");
        out_.line(max ? "v = mg::max_of(v, __shfl_xor_sync(0xffffffffu, v, 1));"
                      : "v += __shfl_xor_sync(0xffffffffu, v, 1);");
        out_.line(max ? "v = mg::max_of(v, __shfl_xor_sync(0xffffffffu, v, 2));"
                      : "v += __shfl_xor_sync(0xffffffffu, v, 2);");
        // A positive scale commutes with the max, and rounding keeps the order: the max of
        // the unscaled values, scaled, is exactly the max of the scaled ones.
        const double unscaled = max ? unscaledBy(op.inputs[0]) : 1.0;
        out_.line(name(op.output) + "[h] = v" +
                  (unscaled == 1.0 ? "" : " * " + floatLiteral(unscaled)) + ";");
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
      out_.line(m + "_factor[h] = it == 0 ? 0.0f : mg::exp(" + m + "[h] - updated);");
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
    // No zeroing: the first k-step overwrites the accumulators (ScaleD = 0).
    out_.line("float " + s + "[" + str(at_.kv / 2) + "];");
    // Consumer 0 takes the first turn unasked.
    if (takesTurns()) out_.line("if (consumer != 0 || it != 0) turns.wait();");
    out_.line("mg::wgmma_fence();");
    const std::string call = "mg::wgmma_" + ring_.wgmmaShape(at_.kv) + "<" +
                             (at_.q.kMajor ? "0" : "1") + ", " + (at_.k.kMajor ? "0" : "1");
    for (int kk = 0; kk < at_.d / 16; ++kk) {
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
        "mg::wgmma_" + ring_.wgmmaShape(at_.d) + "_rs<" + (at_.v.kMajor ? "0" : "1") + ">";
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
      out_.line("for (int f = 0; f < " + str(at_.d / 2) + "; ++f) " + o +
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
      out_.line("for (int f = 0; f < " + str(at_.d / 2) + "; ++f) " + o +
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
};

}  // namespace

void emitWarpgroupAttentionBody(const EmitContext& context) {
  // Every position this path prints follows its block index names (bx, by, bz).
  EmitContext named = context;
  named.blockIndex = kWarpgroupTile;
  AttentionEmitter(named).emit();
}

}  // namespace mugraph::codegen
