// Global <-> shared copies of tiles. Input tiles are copied in their storage order (the
// last stored dim is contiguous in global memory, also for transposed tensors) in the widest
// chunks that stay aligned, with cp.async where possible; output tiles are converted to the
// output dtype and stored in the widest aligned chunks.
#include "codegen/emit/context.h"

namespace mugraph::codegen {
std::string baseOffset(const EmitContext& context, const plan::GridSteps& blockStep,
                       const graph::DimProduct& iterationStep, const std::string& iteration,
                       const std::array<bool, graph::kGridAxes>& perTrip) {
  static const char* kBlock[graph::kGridAxes] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
  std::string text;
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (blockStep[axis].coefficient == 0) continue;
    if (!text.empty()) text += " + ";
    text += "static_cast<long long>(" + std::string(kBlock[axis]) + ") * " +
            context.product(blockStep[axis]);
    if (perTrip[axis]) text += " * " + context.forloop();
  }
  if (iterationStep.coefficient != 0) {
    if (!text.empty()) text += " + ";
    text += "static_cast<long long>(" + iteration + ") * " + context.product(iterationStep);
  }
  return text.empty() ? "0" : text;
}

namespace {

// Names the three outer indices of a row of a [e0][e1][e2][cols] box.
std::array<std::string, 3> splitRow(CudaWriter& out, const Extent4& extent) {
  std::array<std::string, 3> names{"0", "0", "0"};
  const char* kNames[3] = {"s0", "s1", "s2"};
  int64_t inner = extent[0] * extent[1] * extent[2];
  const int64_t rows = inner;
  for (int d = 0; d < 3; ++d) {
    if (extent[d] == 1) continue;
    const bool outermost = inner == rows;
    inner /= extent[d];
    std::string expression = "row";
    if (inner != 1) expression += " / " + std::to_string(inner);
    if (!outermost) expression = "(" + expression + ") % " + std::to_string(extent[d]);
    out.line("const int " + std::string(kNames[d]) + " = " + expression + ";");
    names[d] = kNames[d];
  }
  return names;
}

// Element offset of (s0, s1, s2, col) in global memory, in 64-bit arithmetic.
std::string globalOffset(const EmitContext& context, const std::array<std::string, 3>& s,
                         const plan::Stride4& stride) {
  const auto wide = [](const std::string& index) {
    return index == "0" ? index : "static_cast<long long>(" + index + ")";
  };
  return linearExpression(
      std::vector<std::pair<std::string, std::string>>{{wide(s[0]), context.product(stride[0])},
                                                       {wide(s[1]), context.product(stride[1])},
                                                       {wide(s[2]), context.product(stride[2])},
                                                       {"col", "1"}});
}

std::string storedIndex(const SharedTile& tile, const std::string& row, const std::string& col) {
  if (tile.swizzleMask == 0) return linearExpression({{row, tile.cols}, {col, 1}});
  const int chunkElements = static_cast<int>(16 / graph::dtypeBytes(tile.dtype));
  return "mg::swizzle<" + std::to_string(chunkElements) + ">(" + row + ", " + col + ", " +
         std::to_string(tile.cols) + ", " + std::to_string(tile.swizzleMask) + ")";
}

// The real extents of an input or output tile's box in storage order (graph/tile_splits.h):
// rows whose outer indices pass `rowCondition`, and how many of a chunk's columns are real.
struct RealBox {
  std::array<std::string, graph::kMaxRank> extent;  // "" where the box dim is not partial

  bool partial() const {
    for (const std::string& e : extent) {
      if (!e.empty()) return true;
    }
    return false;
  }
  std::string rowCondition(const std::array<std::string, 3>& s) const {
    std::string condition;
    for (int k = 0; k < 3; ++k) {
      if (extent[k].empty() || s[k] == "0") continue;
      condition += (condition.empty() ? "" : " && ") + s[k] + " < " + extent[k];
    }
    return condition.empty() ? "true" : condition;
  }
  // Real elements of the chunk of `chunk` columns starting at column `col` (0 to chunk).
  std::string columnsFrom(const std::string& col, int64_t chunk) const {
    if (extent[3].empty()) return std::to_string(chunk);
    return "mg::clamp_count(" + extent[3] + " - " + col + ", " + std::to_string(chunk) + ")";
  }
};

RealBox realBox(const EmitContext& context, graph::TensorId tile, bool transposed,
                const std::string& iteration) {
  std::array<int, graph::kMaxRank> order{0, 1, 2, 3};
  if (transposed) std::swap(order[2], order[3]);
  RealBox box;
  for (int k = 0; k < graph::kMaxRank; ++k) {
    const std::string real = context.realExtent(tile, order[k], iteration);
    const int64_t extent = padTo4(context.block().tensors[tile].shape)[order[k]];
    box.extent[k] = real == std::to_string(extent) ? "" : real;
  }
  return box;
}

RealBox realBox(const EmitContext& context, const graph::BlockOp& op,
                const std::string& iteration) {
  const graph::TensorDesc& source =
      context.plan.graph->tensors[context.plan.kernel->inputs[op.kernelTensor]];
  return realBox(context, op.output, source.layout == graph::Layout::Transposed, iteration);
}

// Floats a thread holds in register accumulators across the for-loop.
int accumulatorRegisters(const EmitContext& context) {
  int floats = 0;
  for (const plan::OpPlan& op : context.general().ops) {
    if (op.mma && op.accumulateInPlace) floats += op.mma->fragments();
  }
  return floats;
}

// The most accumulator floats a thread may hold where a loop's copies are unrolled.
constexpr int kUnrolledCopyAccumulators = 32;

}  // namespace

void emitInputLoad(const EmitContext& context, int opIndex, const std::string& buffer,
                   const std::string& iteration, bool inLoop) {
  const graph::BlockOp& op = context.block().ops[opIndex];
  const InputCopy& copy = *context.plan.inputs[opIndex];
  const SharedTile& tile = context.general().shared[op.output];
  const int64_t elementBytes = graph::dtypeBytes(tile.dtype);
  const int64_t chunkElements = copy.chunkBytes / elementBytes;
  const int64_t chunksPerRow = copy.boxExtent[3] / chunkElements;
  const int64_t rows = copy.boxExtent[0] * copy.boxExtent[1] * copy.boxExtent[2];
  CudaWriter& out = context.out;
  out.open("");
  out.line("const " + storageType(tile.dtype) +
           "* const src = " + context.paramName(context.kernel.inputParams[op.kernelTensor]) +
           " + (" + baseOffset(context, copy.blockStep, copy.iterationStep, iteration,
                                    copy.stepPerTrip) +
               ");");
  const RealBox real = realBox(context, op, iteration);
  // Unrolled only where registers are plentiful: a partial tile's copies (masks and zero-fill
  // per chunk) and those of a block holding large accumulator tiles (a GEMM's) spill when
  // their addresses are computed all at once.
  const bool unrolled =
      inLoop && !real.partial() && accumulatorRegisters(context) <= kUnrolledCopyAccumulators;
  openStridedLoop(context, "c", "threadIdx.x", rows * chunksPerRow, context.threads(),
                  unrolled ? kUnrolledTrips : 0);
  out.line("const int row = c / " + std::to_string(chunksPerRow) + ";");
  out.line("const int col = (c % " + std::to_string(chunksPerRow) + ") * " +
           std::to_string(chunkElements) + ";");
  const std::array<std::string, 3> s = splitRow(out, copy.boxExtent);
  out.line("const long long g = " + globalOffset(context, s, copy.globalStride) + ";");
  const std::string destination = buffer + " + " + storedIndex(tile, "row", "col");
  if (real.partial()) {
    // Past the real elements of a partial tile the chunk is zero-filled.
    out.line("const bool rowReal = " + real.rowCondition(s) + ";");
    out.line("const int realElements = rowReal ? " + real.columnsFrom("col", chunkElements) +
             " : 0;");
    if (copy.async) {
      out.line("mg::cp_async_zfill<" + std::to_string(copy.chunkBytes) + ">(" + destination +
               ", realElements > 0 ? src + g : src, realElements * " +
               std::to_string(elementBytes) + ");");
    } else {
      out.line("*(" + destination + ") = realElements > 0 ? src[g] : mg::from_f32<" +
               storageType(tile.dtype) + ">(0.0f);");
    }
  } else if (copy.async) {
    out.line("mg::cp_async<" + std::to_string(copy.chunkBytes) + ">(" + destination +
             ", src + g);");
  } else {
    out.line("*(" + destination + ") = src[g];");
  }
  out.close();
  out.close();
}

void emitOutputStore(const EmitContext& context, int opIndex) {
  const graph::BlockOp& op = context.block().ops[opIndex];
  const OutputCopy& copy = *context.plan.outputs[opIndex];
  const graph::TensorId tile = op.inputs[0];
  const graph::TensorDesc& dest =
      context.plan.graph->tensors[context.plan.kernel->outputs[op.kernelTensor]];
  const std::string type = storageType(dest.dtype);
  const Extent4 extent = padTo4(context.block().tensors[tile].shape);
  const int64_t chunkElements = copy.chunkBytes / graph::dtypeBytes(dest.dtype);
  const int64_t chunksPerRow = extent[3] / chunkElements;
  CudaWriter& out = context.out;
  out.open("");
  out.line(type +
           "* const dst = " + context.paramName(context.kernel.outputParams[op.kernelTensor]) +
           " + (" + baseOffset(context, copy.blockStep, {}, "") + ");");
  const RealBox real = realBox(context, tile, false, "0");
  openStridedLoop(context, "c", "threadIdx.x", extent[0] * extent[1] * extent[2] * chunksPerRow,
                  context.threads(), 0);
  out.line("const int row = c / " + std::to_string(chunksPerRow) + ";");
  out.line("const int col = (c % " + std::to_string(chunksPerRow) + ") * " +
           std::to_string(chunkElements) + ";");
  const std::array<std::string, 3> s = splitRow(out, extent);
  out.line("const long long g = " + globalOffset(context, s, copy.globalStride) + ";");
  if (real.partial()) {
    // Only the real elements of a partial tile exist: whole chunks as usual, the chunk that
    // straddles the end element by element, nothing past it.
    out.line("if (!(" + real.rowCondition(s) + ")) continue;");
    out.line("const int realElements = " + real.columnsFrom("col", chunkElements) + ";");
    out.open("if (realElements < " + std::to_string(chunkElements) + ")");
    out.line("for (int j = 0; j < realElements; ++j) dst[g + j] = mg::from_f32<" + type + ">(" +
             context.readShared(tile, {s[0], s[1], s[2], "col + j"}) + ");");
    out.line("continue;");
    out.close();
  }
  if (chunkElements == 1) {
    out.line("dst[g] = mg::from_f32<" + type + ">(" +
             context.readShared(tile, {s[0], s[1], s[2], "col"}) + ");");
  } else if (graph::dtypeBytes(dest.dtype) == 2) {
    // 16-bit values are packed in pairs into 32-bit words first: building the chunk as an
    // array of 16-bit structs and storing it through another type lost the low bytes of
    // every value but the first on an H200 (NVRTC 13.0).
    const int64_t words = chunkElements / 2;
    out.line("unsigned words[" + std::to_string(words) + "];");
    out.line("#pragma unroll");
    out.line("for (int j = 0; j < " + std::to_string(words) + "; ++j) words[j] = mg::pack2<" +
             type + ">(" + context.readShared(tile, {s[0], s[1], s[2], "col + 2 * j"}) + ", " +
             context.readShared(tile, {s[0], s[1], s[2], "col + 2 * j + 1"}) + ");");
    out.line("mg::store_words<" + std::to_string(words) + ">(dst + g, words);");
  } else {
    out.line("alignas(16) " + type + " values[" + std::to_string(chunkElements) + "];");
    out.line("#pragma unroll");
    out.line("for (int j = 0; j < " + std::to_string(chunkElements) +
             "; ++j) values[j] = mg::from_f32<" + type + ">(" +
             context.readShared(tile, {s[0], s[1], s[2], "col + j"}) + ");");
    out.line("mg::copy_chunk<" + std::to_string(copy.chunkBytes) + ">(dst + g, values);");
  }
  out.close();
  out.close();
}

}  // namespace mugraph::codegen
