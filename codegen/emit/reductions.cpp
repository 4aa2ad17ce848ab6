// Reductions over one dim of a shared tile: reduce_sum (with to=k), reduce_max and rms_norm;
// and the rotations rotate_half and rotate_pairs, which like rms_norm read whole rows of
// their dim.
// Where the plan gives each output element to one warp (OpPlan::warpPerRow), lanes stride
// over the reduced dim and combine with shuffles, so a row of 64 costs two loads per lane
// instead of 64 serial loads by one thread; otherwise each output goes to one thread.
// Either way the result goes through the op's register epilogue (compute.cpp).
#include "codegen/emit/context.h"
#include "graph/cuda_limits.h"

namespace mugraph::codegen {
namespace {

using graph::OpKind;
using graph::TensorId;

Index4 withDim(Index4 index, int dim, const std::string& expression) {
  index[dim] = expression;
  return index;
}

int paddedDim(const graph::BlockTensor& tile, int dim) {
  return graph::kMaxRank - static_cast<int>(tile.shape.size()) + dim;
}

// Opens the loop over output elements: one per thread, or one per warp (lanes named `lane`).
Index4 openRows(const EmitContext& context, const Extent4& extent, bool perWarp,
                const std::string& variable) {
  if (!perWarp) return openElementLoop(context, extent, variable);
  context.out.open("");
  context.out.line("const int warp = threadIdx.x >> 5;");
  context.out.line("const int lane = threadIdx.x & 31;");
  return openElementLoop(context, extent, variable, "warp", context.threads() / 32);
}

void closeRows(const EmitContext& context, bool perWarp) {
  context.out.close();
  if (perWarp) context.out.close();
}

void emitSumOrMax(const EmitContext& context, int opIndex) {
  const graph::BlockOp& op = context.block().ops[opIndex];
  const TensorId x = op.inputs[0];
  const graph::BlockTensor& input = context.block().tensors[x];
  const int dim = paddedDim(input, op.attrs.dim);
  const int64_t n = padTo4(input.shape)[dim];
  const bool sum = op.kind == OpKind::ReduceSum;
  const int64_t terms = sum ? n / op.attrs.to : n;
  // A partial dim is reduced over its real elements only (validation allows to=1 there).
  const std::string real = context.realExtent(x, dim, "it");
  const bool partial = real != std::to_string(n);
  const bool perWarp = context.general().ops[opIndex].warpPerRow;
  const Index4 index =
      openRows(context, padTo4(context.block().tensors[op.output].shape), perWarp, "e");
  const std::string first = perWarp ? "lane" : "0";
  const std::string step = perWarp ? "32" : "1";
  // A prologue (OpPlan::prologue) is applied to each term read from its loaded operand.
  const int prologue = context.general().ops[opIndex].prologue;
  const auto term = [&](const std::string& g) {
    const std::string at =
        !sum || op.attrs.to == 1 ? g : g + " * " + std::to_string(op.attrs.to) + " + " + index[dim];
    if (prologue < 0) return context.readShared(x, withDim(index, dim, at));
    const graph::BlockOp& unary = context.block().ops[prologue];
    const std::string value = context.readShared(unary.inputs[0], withDim(index, dim, at));
    return "(" + elementwiseExpression(unary.kind, unary.attrs, {"(" + value + ")"}) + ")";
  };
  CudaWriter& out = context.out;
  // The padding holds zero (plan/kernel_plan.h), so a sum runs over the whole tile; a max
  // skips it.
  if (sum) {
    out.line("float v = 0.0f;");
    out.line("for (int g = " + first + "; g < " + std::to_string(terms) + "; g += " + step +
             ") v += " + term("g") + ";");
    if (perWarp) out.line("v = mg::warp_sum(v);");
  } else if (partial) {
    out.line("float v = mg::negative_infinity();");
    out.line("for (int g = " + first + "; g < " + std::to_string(terms) + "; g += " + step +
             ") if (g < " + real + ") v = mg::max_of(v, " + term("g") + ");");
    if (perWarp) out.line("v = mg::warp_max(v);");
  } else {
    out.line("float v = " + term(first) + ";");
    out.line("for (int g = " + first + " + " + step + "; g < " + std::to_string(terms) +
             "; g += " + step + ") v = mg::max_of(v, " + term("g") + ");");
    if (perWarp) out.line("v = mg::warp_max(v);");
  }
  if (perWarp) out.open("if (lane == 0)");
  emitEpilogue(context, opIndex, "v", index, "");
  if (perWarp) out.close();
  closeRows(context, perWarp);
}

// rms_norm: the reciprocal of the root of each row's mean square into a shared scratch row
// first, then every element multiplied by it (one IEEE division a row, not one an element; the
// result is within 1.5 ulp of float of the interpreter's x / root, far inside f16 or bf16).
void emitRmsNorm(const EmitContext& context, int opIndex) {
  const graph::BlockOp& op = context.block().ops[opIndex];
  const TensorId x = op.inputs[0];
  const Extent4 extent = padTo4(context.block().tensors[x].shape);
  const int dim = paddedDim(context.block().tensors[x], op.attrs.dim);
  Extent4 rows = extent;
  rows[dim] = 1;
  const std::string scratch = "rms" + std::to_string(opIndex);
  const auto rowIndex = [&](const Index4& index) {
    std::vector<std::pair<std::string, int64_t>> terms;
    int64_t stride = 1;
    for (int d = graph::kMaxRank - 1; d >= 0; --d) {
      if (d == dim) continue;
      terms.insert(terms.begin(), {index[d], stride});
      stride *= rows[d];
    }
    return linearExpression(terms);
  };
  CudaWriter& out = context.out;
  out.line("float* const " + scratch + " = reinterpret_cast<float*>(mg_smem + " +
           std::to_string(context.general().rmsScratch[opIndex]) + ");");
  const bool perWarp = context.general().ops[opIndex].warpPerRow;
  const int shared = context.general().ops[opIndex].warpsPerRow;  // warps per row
  // Over a partial dim: the real elements' mean square (the padding holds zero).
  const std::string real = context.realExtent(x, dim, "it");
  const std::string meanFactor = real == std::to_string(extent[dim])
                                     ? floatLiteral(1.0 / static_cast<double>(extent[dim]))
                                     : "(1.0f / static_cast<float>(" + real + "))";
  const auto inverseRoot = [&](const std::string& sum) {
    return "1.0f / sqrtf(" + sum + " * " + meanFactor + ")";
  };
  if (shared > 1) {
    // Each row's warps take every shared-th stretch of 32; a warp's partial sum lands in the
    // scratch at [row][part], and one thread per row adds the parts in order.
    const std::string parts = std::to_string(shared);
    out.open("");
    out.line("const int warp = threadIdx.x >> 5;");
    out.line("const int lane = threadIdx.x & 31;");
    out.line("const int part = warp % " + parts + ";");
    const Index4 index =
        openElementLoop(context, rows, "r", "warp / " + parts, context.threads() / 32 / shared);
    out.line("float sum = 0.0f;");
    out.open("for (int g = part * 32 + lane; g < " + std::to_string(extent[dim]) +
             "; g += " + std::to_string(32 * shared) + ")");
    out.line("const float x = " + context.readShared(x, withDim(index, dim, "g")) + ";");
    out.line("sum += x * x;");
    out.close();
    out.line("sum = mg::warp_sum(sum);");
    out.line("if (lane == 0) " + scratch + "[(" + rowIndex(index) + ") * " + parts +
             " + part] = sum;");
    out.close();
    out.close();
    out.line("__syncthreads();");
    const Index4 row = openElementLoop(context, rows, "r");
    out.line("float sum = 0.0f;");
    out.line("for (int p = 0; p < " + parts + "; ++p) sum += " + scratch + "[(" + rowIndex(row) +
             ") * " + parts + " + p];");
    out.line(scratch + "[(" + rowIndex(row) + ") * " + parts + "] = " + inverseRoot("sum") + ";");
    out.close();
  } else {
    const Index4 index = openRows(context, rows, perWarp, "r");
    out.line("float sum = 0.0f;");
    out.open("for (int g = " + std::string(perWarp ? "lane" : "0") + "; g < " +
             std::to_string(extent[dim]) + "; g += " + (perWarp ? "32" : "1") + ")");
    out.line("const float x = " + context.readShared(x, withDim(index, dim, "g")) + ";");
    out.line("sum += x * x;");
    out.close();
    if (perWarp) out.line("sum = mg::warp_sum(sum);");
    out.line(std::string(perWarp ? "if (lane == 0) " : "") + scratch + "[" + rowIndex(index) +
             "] = " + inverseRoot("sum") + ";");
    closeRows(context, perWarp);
  }
  out.line("__syncthreads();");
  const Index4 index = openElementLoop(context, extent);
  const std::string rowRoot =
      shared > 1 ? "(" + rowIndex(withDim(index, dim, "0")) + ") * " + std::to_string(shared)
                 : rowIndex(withDim(index, dim, "0"));
  out.line("const float v = " + context.readShared(x, index) + " * " + scratch + "[" + rowRoot +
           "];");
  emitEpilogue(context, opIndex, "v", index, "");
  out.close();
}

// rotate_half: each element reads its partner half a row away, negated in the first half
// (verify/apply_op_impl.h defines it). The dim is whole in the tile (the search keeps it so).
void emitRotateHalf(const EmitContext& context, int opIndex) {
  const graph::BlockOp& op = context.block().ops[opIndex];
  const TensorId x = op.inputs[0];
  const Extent4 extent = padTo4(context.block().tensors[x].shape);
  const int dim = paddedDim(context.block().tensors[x], op.attrs.dim);
  const std::string half = std::to_string(extent[dim] / 2);
  CudaWriter& out = context.out;
  const Index4 index = openElementLoop(context, extent);
  const std::string j = "(" + index[dim] + ")";
  const std::string partner =
      "(" + j + " < " + half + " ? " + j + " + " + half + " : " + j + " - " + half + ")";
  out.line("const float r = " + context.readShared(x, withDim(index, dim, partner)) + ";");
  out.line("const float v = " + j + " < " + half + " ? -r : r;");
  emitEpilogue(context, opIndex, "v", index, "");
  out.close();
}

// rotate_pairs: each element reads its neighbour j ^ 1, negated at even j (interleaved RoPE,
// verify/apply_op_impl.h). The dim is whole in the tile, as for rotate_half, so j is the
// element's place in the row.
void emitRotatePairs(const EmitContext& context, int opIndex) {
  const graph::BlockOp& op = context.block().ops[opIndex];
  const TensorId x = op.inputs[0];
  const Extent4 extent = padTo4(context.block().tensors[x].shape);
  const int dim = paddedDim(context.block().tensors[x], op.attrs.dim);
  CudaWriter& out = context.out;
  const Index4 index = openElementLoop(context, extent);
  const std::string j = "(" + index[dim] + ")";
  out.line("const float r = " + context.readShared(x, withDim(index, dim, "(" + j + " ^ 1)")) +
           ";");
  out.line("const float v = (" + j + " & 1) == 0 ? -r : r;");
  emitEpilogue(context, opIndex, "v", index, "");
  out.close();
}

// A row phase (plan::RowPhase): per row, a group of lanes reads the reduced tile once into
// registers, takes the max (updating the running max), applies the element-wise op and its
// chain to each element, and sums what the reduce_sum reads; shuffles within the group combine
// the lanes' parts. Every thread runs the same passes, so the shuffles see whole warps; lanes
// past the last row compute row 0's values and store nothing.
void emitRowPhase(const EmitContext& context, int opIndex) {
  const plan::RowPhase& phase = *context.general().ops[opIndex].rowPhase;
  const graph::BlockGraph& block = context.block();
  const graph::BlockOp& max = block.ops[opIndex];
  const graph::BlockOp& sum = block.ops[phase.sum];
  const TensorId x = max.inputs[0];
  const int dim = paddedDim(block.tensors[x], max.attrs.dim);
  const int64_t n = padTo4(block.tensors[x].shape)[dim];
  const Extent4 rows = padTo4(block.tensors[max.output].shape);
  const int64_t rowCount = rows[0] * rows[1] * rows[2] * rows[3];
  const int64_t lanes = phase.lanes;
  const int64_t perLane = (n + lanes - 1) / lanes;
  const int64_t rowsPerPass = context.threads() / lanes;
  const int64_t passes = (rowCount + rowsPerPass - 1) / rowsPerPass;
  const bool ragged = n % lanes != 0;
  const std::string real = context.realExtent(x, dim, "it");
  const std::string inRow = real != std::to_string(n) ? "g < " + real
                            : ragged                  ? "g < " + std::to_string(n)
                                                      : "";
  CudaWriter& out = context.out;
  std::string with;
  for (int o : phase.elementwise) {
    with += std::string(graph::opName(block.ops[o].kind)) + " -> " +
            block.tensors[block.ops[o].output].name + ", ";
  }
  out.line("// with " + with + "reduce_sum -> " + block.tensors[sum.output].name + ", " +
           std::to_string(lanes) + " lanes a row");
  out.open("");
  out.line("const int part = threadIdx.x % " + std::to_string(lanes) + ";");
  out.open("for (int pass = 0; pass < " + std::to_string(passes) + "; ++pass)");
  out.line("const int row = pass * " + std::to_string(rowsPerPass) + " + threadIdx.x / " +
           std::to_string(lanes) + ";");
  out.line("const bool live = row < " + std::to_string(rowCount) + ";");
  out.line("const int e = live ? row : 0;");
  const Index4 index = nameElementIndex(context, rows, "e");
  const Index4 at = withDim(index, dim, "g");
  const auto eachElement = [&] {
    out.line("#pragma unroll");
    out.open("for (int j = 0; j < " + std::to_string(perLane) + "; ++j)");
    out.line("const int g = part + j * " + std::to_string(lanes) + ";");
  };
  const auto combine = [&](const std::string& variable, bool isMax) {
    for (int64_t offset = lanes / 2; offset > 0; offset /= 2) {
      const std::string other =
          "__shfl_xor_sync(0xffffffffu, " + variable + ", " + std::to_string(offset) + ")";
      out.line(variable +
               (isMax ? " = mg::max_of(" + variable + ", " + other + ");" : " += " + other + ";"));
    }
  };
  // The padding of a partial tile holds zero: read, as the element-wise op reads it, but not
  // in the max.
  out.line("float x[" + std::to_string(perLane) + "];");
  out.line("float v = mg::negative_infinity();");
  eachElement();
  out.line("x[j] = " + std::string(ragged ? "g < " + std::to_string(n) + " ? " : "") +
           context.readShared(x, at) + (ragged ? " : 0.0f" : "") + ";");
  out.line((inRow.empty() ? "" : "if (" + inRow + ") ") + "v = mg::max_of(v, x[j]);");
  out.close();
  combine("v", true);
  const std::string writer = "live && part == 0";
  std::map<TensorId, std::string> registers{{x, "x[j]"}};
  if (phase.runningMax >= 0) {
    const TensorId running = block.ops[phase.runningMax].output;
    emitRunningMax(context, phase.runningMax,
                   context.tileName(running) + "[" + context.sharedIndex(running, index) + "]", "v",
                   index, writer);
    registers[running] = "running";
  } else {
    out.open("if (" + writer + ")");
    emitEpilogue(context, opIndex, "v", index, "");
    out.close();
    registers[max.output] = "v";
  }
  out.line("float total = 0.0f;");
  eachElement();
  out.open("if (live" + std::string(ragged ? " && g < " + std::to_string(n) : "") + ")");
  // Each op's value, and its chain's (emitEpilogue names them f<tile>), in registers for the
  // ops after it.
  std::map<TensorId, std::string> values = registers;
  for (size_t i = 0; i < phase.elementwise.size(); ++i) {
    const int o = phase.elementwise[i];
    const std::string name = "y" + std::to_string(i);
    emitElementwiseAt(context, o, at, values, name);
    values[block.ops[o].output] = name;
    for (TensorId t : context.general().ops[o].chain) values[t] = "f" + std::to_string(t);
  }
  const TensorId summed = sum.inputs[0];
  const std::string value = values.at(summed);
  const std::string realSummed = context.realCondition(summed, at, "it");
  out.line("total += " +
           (realSummed.empty() ? value : "(" + realSummed + ") ? " + value + " : 0.0f") + ";");
  out.close();
  out.close();
  combine("total", false);
  out.open("if (" + writer + ")");
  emitEpilogue(context, phase.sum, "total", index, "");
  out.close();
  out.close();
  out.close();
}

}  // namespace

void emitReduction(const EmitContext& context, int opIndex) {
  if (context.general().ops[opIndex].rowPhase) {
    emitRowPhase(context, opIndex);
  } else if (context.block().ops[opIndex].kind == OpKind::RotateHalf) {
    emitRotateHalf(context, opIndex);
  } else if (context.block().ops[opIndex].kind == OpKind::RotatePairs) {
    emitRotatePairs(context, opIndex);
  } else if (context.block().ops[opIndex].kind == OpKind::RmsNorm) {
    emitRmsNorm(context, opIndex);
  } else {
    emitSumOrMax(context, opIndex);
  }
}

}  // namespace mugraph::codegen
