// Kernels planned as thread-owned elements (plan/paths/thread_owned_plan.h): no
// shared memory and no barriers. Each thread keeps, per owned element k, one register per
// accumulator and per loop-invariant input; every iteration it loads its elements of the
// iteration's input tiles straight from global memory and applies the block's ops in order,
// tiles that are 1 along a dim read at index 0 there (a broadcast, computed redundantly by
// every thread that needs it). After the loop it computes the post-loop ops and stores each
// output element from registers; an output that is 1 along a dim is stored by the threads
// whose element has index 0 there.
#include "codegen/emit/context.h"

namespace mugraph::codegen {
namespace {

using graph::OpKind;
using graph::TensorId;

// Iterations times owned elements up to which the loop is unrolled whole.
inline constexpr int64_t kFullyUnrolledLoads = 32;

// The tile's index at the owned element: "0" along the dims where the tile is 1.
Index4 tileIndex(const EmitContext& context, TensorId tile, const Index4& owned) {
  const Extent4 extent = padTo4(context.block().tensors[tile].shape);
  Index4 index = owned;
  for (int d = 0; d < graph::kMaxRank; ++d) {
    if (extent[d] == 1) index[d] = "0";
  }
  return index;
}

class ThreadOwnedEmitter {
 public:
  explicit ThreadOwnedEmitter(const EmitContext& context)
      : context_(context),
        plan_(context.plan),
        block_(context.block()),
        owned_(*context.plan.as<plan::ThreadOwnedPlan>()),
        values_(block_.tensors.size()) {}

  void emit() {
    CudaWriter& out = context_.out;
    const std::string perThread = std::to_string(owned_.perThread);
    for (size_t o = 0; o < block_.ops.size(); ++o) {
      const graph::BlockOp& op = block_.ops[o];
      const bool invariantInput = op.kind == OpKind::Input && !plan_.inputs[o]->perIteration;
      const bool carried = carriedOutOfLoop(static_cast<int>(o));
      if (!invariantInput && !carried && !graph::isAccumulator(op.kind)) continue;
      const std::string name = registers(op.output);
      out.line("float " + name + "[" + perThread + "];");
      values_[op.output] = name + "[k]";
    }
    openOwnedElements();
    for (size_t o = 0; o < block_.ops.size(); ++o) {
      const graph::BlockOp& op = block_.ops[o];
      if (graph::isAccumulator(op.kind)) out.line(registers(op.output) + "[k] = 0.0f;");
      if (op.kind == OpKind::Input && !plan_.inputs[o]->perIteration) {
        out.line(registers(op.output) + "[k] = " + load(static_cast<int>(o), "0") + ";");
      }
    }
    closeOwnedElements();

    // A short loop is unrolled whole, so every iteration's loads are in flight at once (a
    // split's combine walks its partials in one memory latency, not forloop / 4 of them).
    if (block_.forloop * owned_.perThread <= kFullyUnrolledLoads) {
      out.line("#pragma unroll");
    } else if (block_.forloop >= 4) {
      out.line("#pragma unroll 4");
    }
    out.open("for (int it = 0; it < " + std::to_string(block_.forloop) + "; ++it)");
    openOwnedElements();
    for (size_t o = 0; o < block_.ops.size(); ++o) {
      const graph::BlockOp& op = block_.ops[o];
      if (op.kind == OpKind::Input && plan_.inputs[o]->perIteration) {
        values_[op.output] = "x" + std::to_string(op.output);
        out.line("const float " + values_[op.output] + " = " + load(static_cast<int>(o), "it") +
                 ";");
      } else if (plan::runsInLoop(plan_, static_cast<int>(o))) {
        emitOp(static_cast<int>(o));
      } else {
        continue;
      }
      if (carriedOutOfLoop(static_cast<int>(o)) && !graph::isAccumulator(op.kind)) {
        out.line(registers(op.output) + "[k] = " + values_[op.output] + ";");
        values_[op.output] = registers(op.output) + "[k]";
      }
    }
    closeOwnedElements();
    out.close();

    openOwnedElements();
    for (size_t o = 0; o < block_.ops.size(); ++o) {
      const graph::BlockOp& op = block_.ops[o];
      if (op.kind == OpKind::Input || op.kind == OpKind::Output) continue;
      if (!plan::runsInLoop(plan_, static_cast<int>(o))) emitOp(static_cast<int>(o));
    }
    for (size_t o = 0; o < block_.ops.size(); ++o) {
      if (block_.ops[o].kind == OpKind::Output) store(static_cast<int>(o));
    }
    closeOwnedElements();
  }

 private:
  std::string registers(TensorId tile) const { return "r" + std::to_string(tile); }

  // Whether op `opIndex` computes its tile inside the loop and something after the loop (a
  // post-loop op, an output) reads it: its last iteration's value then stays in a register.
  bool carriedOutOfLoop(int opIndex) const {
    const graph::BlockOp& op = block_.ops[opIndex];
    const bool inLoop = op.kind == OpKind::Input ? plan_.inputs[opIndex]->perIteration
                                                 : plan::runsInLoop(plan_, opIndex);
    if (!inLoop || op.kind == OpKind::Output) return false;
    for (int consumer : plan_.consumers[op.output]) {
      const graph::BlockOp& reader = block_.ops[consumer];
      if (reader.kind == OpKind::Output || !plan::runsInLoop(plan_, consumer)) return true;
    }
    return false;
  }

  // for (k) { e = threadIdx.x + k * threads; if (e < elements) { i0..i3 ...
  void openOwnedElements() {
    CudaWriter& out = context_.out;
    out.line("#pragma unroll");
    out.open("for (int k = 0; k < " + std::to_string(owned_.perThread) + "; ++k)");
    out.line("const int e = threadIdx.x + k * " + std::to_string(context_.threads()) + ";");
    const bool ragged =
        owned_.elements != static_cast<int64_t>(owned_.perThread) * context_.threads();
    out.open(ragged ? "if (e < " + std::to_string(owned_.elements) + ")" : "");
    index_ = nameElementIndex(context_, owned_.extent, "e");
    for (const std::string& name : index_) {
      if (name != "0") out.line("(void)" + name + ";");
    }
  }

  void closeOwnedElements() {
    context_.out.close();
    context_.out.close();
  }

  // f32 value of input op `opIndex`'s tile at the owned element, read from global memory.
  std::string load(int opIndex, const std::string& iteration) const {
    const graph::BlockOp& op = block_.ops[opIndex];
    const InputCopy& copy = *plan_.inputs[opIndex];
    const graph::TensorDesc& source = plan_.graph->tensors[plan_.kernel->inputs[op.kernelTensor]];
    std::array<int, graph::kMaxRank> order{0, 1, 2, 3};
    if (source.layout == graph::Layout::Transposed) std::swap(order[2], order[3]);
    const Index4 index = tileIndex(context_, op.output, index_);
    std::vector<std::pair<std::string, std::string>> terms;
    for (int k = 0; k < graph::kMaxRank; ++k) {
      terms.push_back({wideIndex(index[order[k]]), context_.product(copy.globalStride[k])});
    }
    return "mg::to_f32(" + context_.paramName(context_.kernel.inputParams[op.kernelTensor]) + "[" +
           baseOffset(context_, copy.blockStep, copy.iterationStep, iteration) + " + " +
           linearExpression(terms) + "])";
  }

  void emitOp(int opIndex) {
    const graph::BlockOp& op = block_.ops[opIndex];
    CudaWriter& out = context_.out;
    std::vector<std::string> x;
    for (TensorId in : op.inputs) x.push_back(values_[in]);
    if (!graph::isAccumulator(op.kind)) {
      values_[op.output] = "v" + std::to_string(op.output);
      std::string value;
      if (op.kind == OpKind::CausalMask) {
        const Index4 index = tileIndex(context_, op.inputs[0], index_);
        value = context_.causalMask(op, x[0], index[2], index[3],
                                    plan::runsInLoop(context_.plan, opIndex) ? "it" : "0");
      } else {
        value = elementwiseExpression(op.kind, op.attrs, x);
      }
      out.line("const float " + values_[op.output] + " = " + value + ";");
      return;
    }
    const std::string& acc = values_[op.output];
    switch (op.kind) {
      case OpKind::AccumSum:
        out.line(acc + " += " + x[0] + ";");
        return;
      case OpKind::AccumRescaledSum:
        // The factor is 0 at iteration 0, where the accumulator is still 0.
        out.line(acc + " = " + acc + " * " + factor(op.inputs[1]) + " + " + x[0] + ";");
        return;
      case OpKind::AccumMax:
        out.line("const float " + factor(op.output) + " = it == 0 ? 0.0f : mg::exp(" + acc +
                 " - mg::max_of(" + acc + ", " + x[0] + "));");
        out.line(acc + " = it == 0 ? " + x[0] + " : mg::max_of(" + acc + ", " + x[0] + ");");
        return;
      default:
        break;
    }
  }

  // This iteration's rescale factor exp(m_{i-1} - m_i) of running max `max`.
  std::string factor(TensorId max) const { return "s" + std::to_string(max); }

  void store(int opIndex) {
    const graph::BlockOp& op = block_.ops[opIndex];
    const OutputCopy& copy = *plan_.outputs[opIndex];
    const graph::TensorDesc& dest = plan_.graph->tensors[plan_.kernel->outputs[op.kernelTensor]];
    const Index4 index = tileIndex(context_, op.inputs[0], index_);
    std::string owner;
    std::vector<std::pair<std::string, std::string>> terms;
    for (int d = 0; d < graph::kMaxRank; ++d) {
      if (index[d] == "0" && index_[d] != "0") {
        owner += std::string(owner.empty() ? "" : " && ") + index_[d] + " == 0";
      }
      terms.push_back({wideIndex(index[d]), context_.product(copy.globalStride[d])});
    }
    const std::string target = context_.paramName(context_.kernel.outputParams[op.kernelTensor]) +
                               "[" + baseOffset(context_, copy.blockStep, {}, "") + " + " +
                               linearExpression(terms) + "]";
    const std::string line =
        target + " = mg::from_f32<" + storageType(dest.dtype) + ">(" + values_[op.inputs[0]] + ");";
    context_.out.line(owner.empty() ? line : "if (" + owner + ") " + line);
  }

  const EmitContext& context_;
  const KernelPlan& plan_;
  const graph::BlockGraph& block_;
  const plan::ThreadOwnedPlan& owned_;
  std::vector<std::string> values_;  // per tile: its f32 value at the owned element
  Index4 index_{"0", "0", "0", "0"};
};

}  // namespace

void emitThreadOwnedBody(const EmitContext& context) {
  ThreadOwnedEmitter(context).emit();
}

}  // namespace mugraph::codegen
