// Tensor-core matmuls (mma.sync m16n8k16, f32 accumulators) and what follows from them:
// each warp owns a block of fragments, the register epilogue runs per fragment element,
// accumulators behind the matmul stay in those fragments across the for-loop and are
// stored to global memory (or to a shared tile, for epilogue ops) straight from registers.
#include "codegen/emit/context.h"

namespace mugraph::codegen {
namespace {

const MmaPlan& registerPlan(const EmitContext& context, graph::TensorId tile) {
  return *context.general().ops[context.general().emitter[tile]].mma;
}

// Opens `if (warp is active)` and names the warp's first row and column.
void openWarpBlock(const EmitContext& context, const MmaPlan& mma) {
  CudaWriter& out = context.out;
  out.open("");
  out.line("const int warp = threadIdx.x >> 5;");
  out.line("const int lane = threadIdx.x & 31;");
  out.line("(void)lane;");
  out.open("if (warp < " + std::to_string(mma.warpsM * mma.warpsN) + ")");
  out.line("const int m0 = (warp / " + std::to_string(mma.warpsN) + ") * " +
           std::to_string(mma.mi * 16) + ";");
  out.line("const int n0 = (warp % " + std::to_string(mma.warpsN) + ") * " +
           std::to_string(mma.ni * 8) + ";");
}

void closeWarpBlock(const EmitContext& context) {
  context.out.close();
  context.out.close();
}

// A K split (MmaPlan::warpsK > 1): every warp names its group and, within it, the same first
// row and column as the warp of group 0 whose block it shares.
void openSplitWarps(const EmitContext& context, const MmaPlan& mma) {
  CudaWriter& out = context.out;
  const std::string groupWarps = std::to_string(mma.warpsMN());
  out.open("");
  out.line("const int warp = threadIdx.x >> 5;");
  out.line("const int lane = threadIdx.x & 31;");
  out.line("(void)lane;");
  out.line("const int group = warp / " + groupWarps + ";");
  out.line("const int m0 = ((warp % " + groupWarps + ") / " + std::to_string(mma.warpsN) +
           ") * " + std::to_string(mma.mi * 16) + ";");
  out.line("const int n0 = ((warp % " + groupWarps + ") % " + std::to_string(mma.warpsN) +
           ") * " + std::to_string(mma.ni * 8) + ";");
}

// The groups' sums meet in group 0's `fragments`: groups 1.. write theirs to shared memory
// (lane-minor, so each store is one transaction per warp), every thread waits, and group 0
// adds them. Leaves `if (group == 0)` open, for what group 0 then does with the result.
void emitSplitReduce(const EmitContext& context, const MmaPlan& mma,
                     const std::string& fragments) {
  CudaWriter& out = context.out;
  const std::string groupWarps = std::to_string(mma.warpsMN());
  const std::string perWarp = std::to_string(mma.fragments() * 32);
  const std::string count = std::to_string(mma.fragments());
  out.line("float* const mg_split = reinterpret_cast<float*>(mg_smem + " +
           std::to_string(mma.scratchOffset) + ");");
  out.open("if (group > 0 && group < " + std::to_string(mma.warpsK) + ")");
  out.line("float* const mine = mg_split + ((group - 1) * " + groupWarps + " + warp % " +
           groupWarps + ") * " + perWarp + " + lane;");
  out.line("#pragma unroll");
  out.line("for (int f = 0; f < " + count + "; ++f) mine[f * 32] = " + fragments + "[f];");
  out.close();
  out.line("__syncthreads();");
  out.open("if (group == 0)");
  out.open("for (int other = 1; other < " + std::to_string(mma.warpsK) + "; ++other)");
  out.line("const float* const theirs = mg_split + ((other - 1) * " + groupWarps +
           " + warp) * " + perWarp + " + lane;");
  out.line("#pragma unroll");
  out.line("for (int f = 0; f < " + count + "; ++f) " + fragments + "[f] += theirs[f * 32];");
  out.close();
}

// Loops over the thread's fragment elements; `pairs` steps two columns at a time.
void openFragmentLoop(const EmitContext& context, const MmaPlan& mma, bool pairs) {
  CudaWriter& out = context.out;
  out.line("#pragma unroll");
  out.open("for (int mi = 0; mi < " + std::to_string(mma.mi) + "; ++mi)");
  out.line("#pragma unroll");
  out.open("for (int ni = 0; ni < " + std::to_string(mma.ni) + "; ++ni)");
  out.line("#pragma unroll");
  out.open(pairs ? "for (int r = 0; r < 4; r += 2)" : "for (int r = 0; r < 4; ++r)");
  out.line("const int i2 = m0 + mi * 16 + (lane >> 2) + ((r >> 1) << 3);");
  out.line("const int i3 = n0 + ni * 8 + ((lane & 3) << 1)" +
           std::string(pairs ? "" : " + (r & 1)") + ";");
  out.line("const int f = (mi * " + std::to_string(mma.ni) + " + ni) * 4 + r;");
  if (mma.padded()) out.line("if (i2 >= " + std::to_string(mma.rows) + ") continue;");
}

void closeFragmentLoop(const EmitContext& context) {
  context.out.close();
  context.out.close();
  context.out.close();
}

// acc = acc * exp(m_{i-1} - m_i) + x_i with acc in fragments: rescale them here, then mma
// adds x_i in place. A factor that does not vary along columns (a row max) is read once per
// fragment row: each thread holds rows m0 + mi * 16 + lane / 4 and the same + 8.
void emitRegisterRescale(const EmitContext& context, const MmaPlan& mma,
                         const std::string& fragments, graph::TensorId max) {
  if (context.general().rescaleFactors[max]->extent[3] != 1) {
    openFragmentLoop(context, mma, false);
    context.out.line(fragments + "[f] *= " + context.factorElement(max, {"0", "0", "i2", "i3"}) +
                     ";");
    closeFragmentLoop(context);
    return;
  }
  CudaWriter& out = context.out;
  out.line("#pragma unroll");
  out.open("for (int mi = 0; mi < " + std::to_string(mma.mi) + "; ++mi)");
  out.line("#pragma unroll");
  out.open("for (int half = 0; half < 2; ++half)");
  out.line("const int i2 = m0 + mi * 16 + (lane >> 2) + (half << 3);");
  if (mma.padded()) out.line("if (i2 >= " + std::to_string(mma.rows) + ") continue;");
  out.line("const float factor = " + context.factorElement(max, {"0", "0", "i2", "0"}) + ";");
  out.line("#pragma unroll");
  out.open("for (int ni = 0; ni < " + std::to_string(mma.ni) + "; ++ni)");
  out.line("const int f = (mi * " + std::to_string(mma.ni) + " + ni) * 4 + half * 2;");
  out.line(fragments + "[f] *= factor;");
  out.line(fragments + "[f + 1] *= factor;");
  out.close();
  out.close();
  out.close();
}

}  // namespace

void emitMmaOp(const EmitContext& context, int opIndex) {
  const OpPlan& opPlan = context.general().ops[opIndex];
  const MmaPlan& mma = *opPlan.mma;
  const graph::BlockOp& op = context.block().ops[opIndex];
  const SharedTile& a = context.general().shared[op.inputs[0]];
  const SharedTile& b = context.general().shared[op.inputs[1]];
  std::string fragments = "frag";
  const graph::BlockOp* inPlace = nullptr;
  if (opPlan.accumulateInPlace) {
    for (int accumulatorOp : context.general().foldedAccumulators) {
      if (context.block().ops[accumulatorOp].inputs[0] == op.output) {
        inPlace = &context.block().ops[accumulatorOp];
        fragments = context.registersName(inPlace->output);
      }
    }
  }
  const bool split = mma.warpsK > 1;
  if (split) {
    openSplitWarps(context, mma);
  } else {
    openWarpBlock(context, mma);
  }
  CudaWriter& out = context.out;
  if (!opPlan.accumulateInPlace) {
    out.line("float frag[" + std::to_string(mma.fragments()) + "];");
    out.line("#pragma unroll");
    out.line("for (int f = 0; f < " + std::to_string(mma.fragments()) + "; ++f) frag[f] = 0.0f;");
  } else if (inPlace->kind == graph::OpKind::AccumRescaledSum) {
    emitRegisterRescale(context, mma, fragments, inPlace->inputs[1]);
  }
  const int64_t k = mma.k / mma.warpsK;
  const std::string call =
      "mg::mma_warp_tile<" + storageType(mma.dtype) + ", " + std::to_string(mma.mi) + ", " +
      std::to_string(mma.ni) + ", " + std::to_string(k) + ", " +
      (mma.aStoredKM ? "true" : "false") + ", " + (mma.bStoredKN ? "true" : "false") +
      (mma.padded() ? ", " + std::to_string(mma.rows) : "") + ">(" + fragments + ", " +
      context.tileName(op.inputs[0]) + ", " + std::to_string(a.cols) + ", " +
      std::to_string(a.swizzleMask) + ", " + context.tileName(op.inputs[1]) + ", " +
      std::to_string(b.cols) + ", " + std::to_string(b.swizzleMask) + ", m0, n0" +
      (split ? ", group * " + std::to_string(k) : "") + ");";
  if (split) {
    out.line("if (group < " + std::to_string(mma.warpsK) + ") " + call);
  } else {
    out.line(call);
  }
  if (split && !opPlan.accumulateInPlace) emitSplitReduce(context, mma, "frag");
  if (!opPlan.accumulateInPlace) {
    openFragmentLoop(context, mma, false);
    emitEpilogue(context, opIndex, "frag[f]", {"0", "0", "i2", "i3"}, "f");
    closeFragmentLoop(context);
  }
  if (split && !opPlan.accumulateInPlace) out.close();  // if (group == 0)
  if (split) {
    out.close();
  } else {
    closeWarpBlock(context);
  }
}

void emitRegisterOutputStore(const EmitContext& context, int opIndex) {
  const graph::BlockOp& op = context.block().ops[opIndex];
  const OutputCopy& copy = *context.plan.outputs[opIndex];
  const graph::TensorId tile = op.inputs[0];
  const MmaPlan& mma = registerPlan(context, tile);
  const graph::TensorDesc& dest =
      context.plan.graph->tensors[context.plan.kernel->outputs[op.kernelTensor]];
  const std::string type = storageType(dest.dtype);
  const std::string values = context.registersName(tile);
  if (mma.warpsK > 1) {  // the groups' sums meet first (the store is the sum's one reader)
    openSplitWarps(context, mma);
    context.out.line("(void)m0;");
    context.out.line("(void)n0;");
    emitSplitReduce(context, mma, values);
    context.out.close();
    context.out.close();
  }
  const int64_t elementBytes = graph::dtypeBytes(dest.dtype);
  std::string base;
  static const char* kBlock[graph::kGridAxes] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (copy.blockStep[axis].coefficient == 0) continue;
    base += " + static_cast<long long>(" + std::string(kBlock[axis]) + ") * " +
            context.product(copy.blockStep[axis]);
  }
  openWarpBlock(context, mma);
  CudaWriter& out = context.out;
  out.line(type + "* const dst = " +
           context.paramName(context.kernel.outputParams[op.kernelTensor]) + base + ";");
  openFragmentLoop(context, mma, true);
  out.line("const long long g = static_cast<long long>(i2) * " +
           context.product(copy.globalStride[2]) + " + i3;");
  const std::string realRows = context.realExtent(tile, 2, "0");
  const std::string realCols = context.realExtent(tile, 3, "0");
  const Extent4 extent = padTo4(context.block().tensors[tile].shape);
  if (realRows != std::to_string(extent[2]) || realCols != std::to_string(extent[3])) {
    // A partial tile: only real elements are stored (the pair's second may be past the end).
    out.line("if (i2 >= " + realRows + " || i3 >= " + realCols + ") continue;");
    out.open("if (i3 + 1 >= " + realCols + ")");
    out.line("dst[g] = mg::from_f32<" + type + ">(" + values + "[f]);");
    out.line("continue;");
    out.close();
  }
  if (copy.chunkBytes >= 2 * elementBytes) {
    out.line("mg::store_pair(dst + g, " + values + "[f], " + values + "[f + 1]);");
  } else {
    out.line("dst[g] = mg::from_f32<" + type + ">(" + values + "[f]);");
    out.line("dst[g + 1] = mg::from_f32<" + type + ">(" + values + "[f + 1]);");
  }
  closeFragmentLoop(context);
  closeWarpBlock(context);
}

void emitMaterialize(const EmitContext& context, graph::TensorId tile) {
  const MmaPlan& mma = registerPlan(context, tile);
  openWarpBlock(context, mma);
  openFragmentLoop(context, mma, false);
  context.out.line(context.materializedName(tile) + "[" +
                   context.sharedIndex(tile, {"0", "0", "i2", "i3"}) +
                   "] = " + context.registersName(tile) + "[f];");
  closeFragmentLoop(context);
  closeWarpBlock(context);
}

}  // namespace mugraph::codegen
