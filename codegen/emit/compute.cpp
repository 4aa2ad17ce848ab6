// The general path: every compute op as a loop over its output elements, spread over all
// threads of the block, reading operands from shared tiles (any shape, broadcasting, any
// layout), followed by the op's register epilogue (fused element-wise chain, shared stores,
// folded accumulator updates). Correct for every valid block graph; the tensor-core matmul
// (mma.cpp) replaces it where the shapes allow.
#include <map>

#include "codegen/emit/context.h"
#include "graph/error.h"

namespace mugraph::codegen {
using graph::OpKind;
using graph::TensorId;

std::string elementwiseExpression(OpKind kind, const graph::OpAttrs& attrs,
                                  const std::vector<std::string>& x) {
  switch (kind) {
    case OpKind::Exp:
      return "mg::exp(" + x[0] + ")";
    case OpKind::Square:
      return x[0] + " * " + x[0];
    case OpKind::Sqrt:
      return "sqrtf(" + x[0] + ")";
    case OpKind::Silu:
      return "mg::silu(" + x[0] + ")";
    case OpKind::Sigmoid:
      return "mg::sigmoid(" + x[0] + ")";
    case OpKind::Tanh:
      return "mg::tanh(" + x[0] + ")";
    case OpKind::Erf:
      return "erff(" + x[0] + ")";
    case OpKind::Relu:
      return "fmaxf(" + x[0] + ", 0.0f)";
    case OpKind::Scale:
      return x[0] + " * " + floatLiteral(attrs.scale);
    case OpKind::AddScalar:
      return x[0] + " + " + floatLiteral(attrs.scale);
    case OpKind::Add:
      return x[0] + " + " + x[1];
    case OpKind::Sub:
      return x[0] + " - " + x[1];
    case OpKind::Mul:
      return x[0] + " * " + x[1];
    case OpKind::Div:
      return x[0] + " / " + x[1];
    default:
      throw UserError(std::string(graph::opName(kind)), "is not an element-wise op");
  }
}

namespace {

// Element-wise op `opIndex` at element `index` of its result, from operand values `x`.
std::string expressionAt(const EmitContext& context, int opIndex, const std::vector<std::string>& x,
                         const Index4& index) {
  const graph::BlockOp& op = context.block().ops[opIndex];
  if (op.kind != OpKind::CausalMask) return elementwiseExpression(op.kind, op.attrs, x);
  const std::string iteration = plan::runsInLoop(context.plan, opIndex) ? "it" : "0";
  return context.causalMask(op, x[0], index[2], index[3], iteration);
}

// Binds each operand's value to a named f32 (registers for chain tiles, shared reads else).
std::vector<std::string> bindOperands(const EmitContext& context, const graph::BlockOp& op,
                                      const Index4& index,
                                      const std::map<TensorId, std::string>& registers,
                                      const std::string& prefix) {
  std::vector<std::string> names;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const TensorId in = op.inputs[i];
    const auto found = registers.find(in);
    if (found != registers.end()) {
      names.push_back(found->second);
      continue;
    }
    const std::string name = prefix + "_" + std::to_string(i);
    context.out.line("const float " + name + " = " + context.readShared(in, index) + ";");
    names.push_back(name);
  }
  return names;
}

void emitAccumulate(const EmitContext& context, int accumulatorOp, const std::string& value,
                    const Index4& index, const std::string& fragment) {
  const graph::BlockOp& op = context.block().ops[accumulatorOp];
  const TensorId acc = op.output;
  std::string target;
  if (context.general().home[acc] == TileHome::Registers) {
    target = context.registersName(acc) + "[" + fragment + "]";
  } else if (context.general().home[acc] == TileHome::Shared) {
    target = context.tileName(acc) + "[" + context.sharedIndex(acc, index) + "]";
  } else {
    return;
  }
  CudaWriter& out = context.out;
  switch (op.kind) {
    case OpKind::AccumSum:
      out.line(target + " += " + value + ";");
      return;
    case OpKind::AccumRescaledSum:
      // Starts from zero, so iteration 0 (factor 0) gives x_0.
      out.line(target + " = " + target + " * " + context.factorElement(op.inputs[1], index) +
               " + " + value + ";");
      return;
    default:
      break;
  }
  if (!context.general().rescaleFactors[acc]) {
    out.line(target + " = it == 0 ? " + value + " : mg::max_of(" + target + ", " + value + ");");
    return;
  }
  out.open("");
  emitRunningMax(context, accumulatorOp, target, value, index, "");
  out.close();
}

}  // namespace

void emitRunningMax(const EmitContext& context, int accumulatorOp, const std::string& target,
                    const std::string& value, const Index4& index, const std::string& writer) {
  const TensorId acc = context.block().ops[accumulatorOp].output;
  CudaWriter& out = context.out;
  out.line("const float previous = " + target + ";");
  // The writer overwrites what the other threads of its warp have just read.
  if (!writer.empty()) out.line("__syncwarp();");
  out.line("const float running = it == 0 ? " + value + " : mg::max_of(previous, " + value + ");");
  if (!writer.empty()) out.open("if (" + writer + ")");
  out.line(target + " = running;");
  if (context.general().rescaleFactors[acc]) {
    out.line(context.factorElement(acc, index) +
             " = it == 0 ? 0.0f : mg::exp(previous - running);");
  }
  if (!writer.empty()) out.close();
}

namespace {

void emitSinks(const EmitContext& context, int host, TensorId tile, const std::string& computed,
               const Index4& index, const std::string& fragment) {
  const plan::GeneralPlan& general = context.general();
  // The padding of a partial tile holds zero (plan/kernel_plan.h, KernelPlan::splits).
  std::string value = computed;
  const std::string real = context.realCondition(tile, index, "it");
  if (!real.empty()) {
    value = "real_" + std::to_string(tile);
    context.out.line("const float " + value + " = (" + real + ") ? " + computed + " : 0.0f;");
  }
  if (general.home[tile] == TileHome::Shared) {
    const graph::DType dtype = general.shared[tile].dtype;
    const std::string converted = dtype == graph::DType::F32
                                      ? value
                                      : "mg::from_f32<" + storageType(dtype) + ">(" + value + ")";
    context.out.line(context.tileName(tile) + "[" + context.sharedIndex(tile, index) +
                     "] = " + converted + ";");
  }
  for (int accumulatorOp : general.foldedAccumulators) {
    const graph::BlockOp& op = context.block().ops[accumulatorOp];
    if (op.inputs[0] == tile && general.emitter[op.output] == host) {
      emitAccumulate(context, accumulatorOp, value, index, fragment);
    }
  }
}

}  // namespace

void emitEpilogue(const EmitContext& context, int host, const std::string& value,
                  const Index4& index, const std::string& fragment) {
  const plan::GeneralPlan& general = context.general();
  const TensorId result = context.block().ops[host].output;
  std::map<TensorId, std::string> registers{{result, value}};
  emitSinks(context, host, result, value, index, fragment);
  for (TensorId tile : general.ops[host].chain) {
    const int producer = context.plan.producer[tile];
    const graph::BlockOp& op = context.block().ops[producer];
    const std::string name = "f" + std::to_string(tile);
    const std::vector<std::string> operands =
        bindOperands(context, op, index, registers, name + "_in");
    context.out.line("const float " + name + " = " +
                     expressionAt(context, producer, operands, index) + ";");
    registers[tile] = name;
    emitSinks(context, host, tile, name, index, fragment);
  }
}

void emitElementwiseAt(const EmitContext& context, int opIndex, const Index4& index,
                       const std::map<TensorId, std::string>& registers, const std::string& name) {
  const std::vector<std::string> operands =
      bindOperands(context, context.block().ops[opIndex], index, registers, name);
  context.out.line("const float " + name + " = " + expressionAt(context, opIndex, operands, index) +
                   ";");
  emitEpilogue(context, opIndex, name, index, "");
}

void emitComputeOp(const EmitContext& context, int opIndex) {
  const graph::BlockOp& op = context.block().ops[opIndex];
  const Extent4 extent = padTo4(context.block().tensors[op.output].shape);
  switch (graph::opInfo(op.kind).opClass) {
    case graph::OpClass::Unary:
    case graph::OpClass::Binary: {
      const Index4 index = openElementLoop(context, extent);
      const std::vector<std::string> operands = bindOperands(context, op, index, {}, "x");
      context.out.line("const float v = " + expressionAt(context, opIndex, operands, index) + ";");
      emitEpilogue(context, opIndex, "v", index, "");
      context.out.close();
      return;
    }
    case graph::OpClass::Matmul: {
      const Index4 index = openElementLoop(context, extent);
      const int64_t inner = padTo4(context.block().tensors[op.inputs[0]].shape)[3];
      context.out.line("float v = 0.0f;");
      const SharedTile& a = context.general().shared[op.inputs[0]];
      const SharedTile& b = context.general().shared[op.inputs[1]];
      // Both operands contiguous along k in 16-bit: 16-byte chunks of 8 terms at a time.
      const bool chunked = a.dtype != graph::DType::F32 && a.dtype == b.dtype && !a.transposed &&
                           b.transposed && inner % 8 == 0;
      if (chunked) {
        context.out.line("for (int k = 0; k < " + std::to_string(inner) +
                         "; k += 8) v += mg::dot8(" + context.tileName(op.inputs[0]) + " + " +
                         context.sharedIndex(op.inputs[0], {index[0], index[1], index[2], "k"}) +
                         ", " + context.tileName(op.inputs[1]) + " + " +
                         context.sharedIndex(op.inputs[1], {index[0], index[1], "k", index[3]}) +
                         ");");
        emitEpilogue(context, opIndex, "v", index, "");
        context.out.close();
        return;
      }
      context.out.line(
          "for (int k = 0; k < " + std::to_string(inner) +
          "; ++k) v += " + context.readShared(op.inputs[0], {index[0], index[1], index[2], "k"}) +
          " * " + context.readShared(op.inputs[1], {index[0], index[1], "k", index[3]}) + ";");
      emitEpilogue(context, opIndex, "v", index, "");
      context.out.close();
      return;
    }
    case graph::OpClass::Reduction:
      emitReduction(context, opIndex);
      return;
    default:
      throw UserError(std::string(graph::opName(op.kind)), "is not a compute op");
  }
}

void emitStandaloneAccumulate(const EmitContext& context, int opIndex) {
  const graph::BlockOp& op = context.block().ops[opIndex];
  if (context.general().home[op.output] == TileHome::None) return;
  const Index4 index = openElementLoop(context, padTo4(context.block().tensors[op.output].shape));
  context.out.line("const float v = " + context.readShared(op.inputs[0], index) + ";");
  emitAccumulate(context, opIndex, "v", index, "");
  context.out.close();
}

}  // namespace mugraph::codegen
