// Kernels planned as row-owned rows (plan/paths/row_owned_plan.h): no shared memory and no
// barriers. Warp w takes rows w, w + warps, ... of the block's tiles; for each, every tile that
// spans the row is an array of `perLane` f32 registers per lane (element k at column
// ((k / vector) * 32 + lane) * vector + k % vector) and every tile that is 1 along it a single
// f32. Inputs are read with one load per chunk, ops run in program order on the registers, a
// row's sum or max is a warp shuffle, and outputs are stored with one store per chunk (a tile
// that is 1 along the row by lane 0). rotate_half pairs element k with k + perLane / 2, which
// is column + half a row in the same lane (the plan keeps the chunks even); rotate_pairs pairs
// element k with k ^ 1, the adjacent column in the same chunk (the plan keeps the vector
// even). A tile with fewer rows than the block's extent (a GQA program's KV heads beside its
// query heads) is read and stored only where its rows are.
#include "codegen/emit/context.h"

namespace mugraph::codegen {
namespace {

using graph::OpKind;
using graph::TensorId;

class RowOwnedEmitter {
 public:
  explicit RowOwnedEmitter(const EmitContext& context)
      : context_(context),
        plan_(context.plan),
        block_(context.block()),
        rows_(*context.plan.as<plan::RowOwnedPlan>()),
        full_(block_.tensors.size()) {
    for (size_t t = 0; t < block_.tensors.size(); ++t) {
      full_[t] = padTo4(block_.tensors[t].shape)[3] != 1;
    }
  }

  void emit() {
    CudaWriter& out = context_.out;
    out.line("const int lane = threadIdx.x & 31;");
    out.line("const int warp = threadIdx.x >> 5;");
    out.line("#pragma unroll " + str(rows_.rowsInFlight));
    out.open("for (int j = 0; j < " + str(rows_.rowsPerWarp()) + "; ++j)");
    out.line("const int row = warp + j * " + str(rows_.warps) + ";");
    if (rows_.rows % rows_.warps != 0) out.line("if (row >= " + str(rows_.rows) + ") break;");
    const Extent4 rowExtent{rows_.extent[0], rows_.extent[1], rows_.extent[2], 1};
    index_ = nameElementIndex(context_, rowExtent, "row");
    for (const std::string& index : index_) {
      if (index != "0") out.line("(void)" + index + ";");
    }
    for (size_t o = 0; o < block_.ops.size(); ++o) emitOp(static_cast<int>(o));
    out.close();
  }

 private:
  std::string name(TensorId tile) const { return "r" + str(tile); }
  std::string chunks() const { return str(rows_.perLane / rows_.vector); }
  std::string vector() const { return str(rows_.vector); }

  // The tile's row index: "0" along the dims where it is 1 (a broadcast).
  Index4 tileIndex(TensorId tile) const {
    const Extent4 extent = padTo4(block_.tensors[tile].shape);
    Index4 index = index_;
    for (int d = 0; d < 3; ++d) {
      if (extent[d] == 1) index[d] = "0";
    }
    index[3] = "0";
    return index;
  }

  // Where the tile has fewer rows than the block's extent: the condition that this row is one
  // of them; else "".
  std::string inside(TensorId tile) const {
    const Extent4 extent = padTo4(block_.tensors[tile].shape);
    std::string condition;
    for (int d = 0; d < 3; ++d) {
      if (extent[d] == 1 || extent[d] == rows_.extent[d]) continue;
      condition += (condition.empty() ? "" : " && ") + index_[d] + " < " + str(extent[d]);
    }
    return condition;
  }

  // Element k of the tile in this lane: its register, or the row's one value.
  std::string at(TensorId tile, const std::string& k) const {
    return full_[tile] ? name(tile) + "[" + k + "]" : name(tile);
  }

  void openElements() const {
    context_.out.line("#pragma unroll");
    context_.out.open("for (int k = 0; k < " + str(rows_.perLane) + "; ++k)");
  }

  void openChunks() const {
    context_.out.line("#pragma unroll");
    context_.out.open("for (int c = 0; c < " + chunks() + "; ++c)");
  }

  // Offset of the tile's row (column 0) in its device tensor; `order` maps storage dims to
  // logical ones (a transposed tensor swaps its last two).
  std::string rowOffset(TensorId tile, const plan::Stride4& stride, const plan::GridSteps& step,
                        const std::array<int, graph::kMaxRank>& order) const {
    const Index4 index = tileIndex(tile);
    std::vector<std::pair<std::string, std::string>> terms;
    for (int k = 0; k < graph::kMaxRank; ++k) {
      terms.push_back({wideIndex(index[order[k]]), context_.product(stride[k])});
    }
    return baseOffset(context_, step, {}, "0") + " + " + linearExpression(terms);
  }

  void emitOp(int opIndex) {
    const graph::BlockOp& op = block_.ops[opIndex];
    switch (op.kind) {
      case OpKind::Input:
        load(opIndex);
        return;
      case OpKind::Output:
        store(opIndex);
        return;
      case OpKind::ReduceSum:
      case OpKind::ReduceMax:
        reduce(op);
        return;
      case OpKind::RmsNorm:
        rmsNorm(op);
        return;
      case OpKind::RotateHalf:
        rotateHalf(op);
        return;
      case OpKind::RotatePairs:
        rotatePairs(op);
        return;
      default:
        elementwise(op);
        return;
    }
  }

  void load(int opIndex) {
    const graph::BlockOp& op = block_.ops[opIndex];
    const InputCopy& copy = *plan_.inputs[opIndex];
    const graph::TensorDesc& source = plan_.graph->tensors[plan_.kernel->inputs[op.kernelTensor]];
    std::array<int, graph::kMaxRank> order{0, 1, 2, 3};
    if (source.layout == graph::Layout::Transposed) std::swap(order[2], order[3]);
    const std::string pointer =
        context_.paramName(context_.kernel.inputParams[op.kernelTensor]) + " + (" +
        rowOffset(op.output, copy.globalStride, copy.blockStep, order) + ")";
    const std::string condition = inside(op.output);
    CudaWriter& out = context_.out;
    if (!full_[op.output]) {
      const std::string value = "mg::to_f32(*(" + pointer + "))";
      out.line("const float " + name(op.output) + " = " +
               (condition.empty() ? value : condition + " ? " + value + " : 0.0f") + ";");
      return;
    }
    out.line("float " + name(op.output) + "[" + str(rows_.perLane) + "];");
    if (!condition.empty()) out.open("if (" + condition + ")");
    openChunks();
    out.line("mg::load_f32<" + vector() + ">(" + pointer + " + (c * 32 + lane) * " + vector() +
             ", &" + name(op.output) + "[c * " + vector() + "]);");
    out.close();
    if (!condition.empty()) {
      out.reopen("else");
      out.line("for (float& v : " + name(op.output) + ") v = 0.0f;");
      out.close();
    }
  }

  void store(int opIndex) {
    const graph::BlockOp& op = block_.ops[opIndex];
    const OutputCopy& copy = *plan_.outputs[opIndex];
    const graph::TensorDesc& dest = plan_.graph->tensors[plan_.kernel->outputs[op.kernelTensor]];
    const TensorId tile = op.inputs[0];
    const std::string pointer =
        context_.paramName(context_.kernel.outputParams[op.kernelTensor]) + " + (" +
        rowOffset(tile, copy.globalStride, copy.blockStep, {0, 1, 2, 3}) + ")";
    std::string condition = inside(tile);
    CudaWriter& out = context_.out;
    const std::string type = storageType(dest.dtype);
    if (!full_[tile]) {
      condition = "lane == 0" + (condition.empty() ? "" : " && " + condition);
      out.line("if (" + condition + ") *(" + pointer + ") = mg::from_f32<" + type + ">(" +
               name(tile) + ");");
      return;
    }
    if (!condition.empty()) out.open("if (" + condition + ")");
    openChunks();
    out.line("mg::store_f32<" + vector() + ">(" + pointer + " + (c * 32 + lane) * " + vector() +
             ", &" + name(tile) + "[c * " + vector() + "]);");
    out.close();
    if (!condition.empty()) out.close();
  }

  void elementwise(const graph::BlockOp& op) {
    CudaWriter& out = context_.out;
    bool full = false;
    for (TensorId in : op.inputs) full = full || full_[in];
    std::vector<std::string> x;
    for (TensorId in : op.inputs) x.push_back(at(in, "k"));
    const std::string value = elementwiseExpression(op.kind, op.attrs, x);
    if (!full) {
      out.line("const float " + name(op.output) + " = " + value + ";");
      return;
    }
    out.line("float " + name(op.output) + "[" + str(rows_.perLane) + "];");
    openElements();
    out.line(name(op.output) + "[k] = " + value + ";");
    out.close();
  }

  // reduce_sum (to=1) or reduce_max of the row: this lane's elements, then the warp's.
  void reduce(const graph::BlockOp& op) {
    CudaWriter& out = context_.out;
    const TensorId x = op.inputs[0];
    const bool sum = op.kind == OpKind::ReduceSum;
    if (!full_[x]) {  // a row of one element
      out.line("const float " + name(op.output) + " = " + name(x) + ";");
      return;
    }
    const std::string partial = "p" + str(op.output);
    out.line("float " + partial + " = " + name(x) + "[0];");
    out.line("#pragma unroll");
    out.line("for (int k = 1; k < " + str(rows_.perLane) + "; ++k) " + partial + " = " +
             (sum ? partial + " + " + name(x) + "[k]"
                  : "mg::max_of(" + partial + ", " + name(x) + "[k])") +
             ";");
    out.line("const float " + name(op.output) + " = mg::warp_" + (sum ? "sum" : "max") + "(" +
             partial + ");");
  }

  // rms_norm: x times 1 / sqrt(mean of the row's squares), as the general path computes it.
  void rmsNorm(const graph::BlockOp& op) {
    CudaWriter& out = context_.out;
    const TensorId x = op.inputs[0];
    const std::string root = "root" + str(op.output);
    if (!full_[x]) {  // a row of one element
      out.line("const float " + name(op.output) + " = " + name(x) + " / sqrtf(" + name(x) + " * " +
               name(x) + ");");
      return;
    }
    const std::string squares = "q" + str(op.output);
    out.line("float " + squares + " = 0.0f;");
    out.line("#pragma unroll");
    out.line("for (int k = 0; k < " + str(rows_.perLane) + "; ++k) " + squares + " += " + name(x) +
             "[k] * " + name(x) + "[k];");
    out.line("const float " + root + " = 1.0f / sqrtf(mg::warp_sum(" + squares + ") * " +
             floatLiteral(1.0 / static_cast<double>(rows_.extent[3])) + ");");
    out.line("float " + name(op.output) + "[" + str(rows_.perLane) + "];");
    openElements();
    out.line(name(op.output) + "[k] = " + name(x) + "[k] * " + root + ";");
    out.close();
  }

  // rotate_half along the row: y[col] = -x[col + h] in the first half, x[col - h] in the second.
  void rotateHalf(const graph::BlockOp& op) {
    CudaWriter& out = context_.out;
    const TensorId x = op.inputs[0];
    const std::string half = str(rows_.perLane / 2);
    out.line("float " + name(op.output) + "[" + str(rows_.perLane) + "];");
    out.line("#pragma unroll");
    out.open("for (int k = 0; k < " + half + "; ++k)");
    out.line(name(op.output) + "[k] = -" + name(x) + "[k + " + half + "];");
    out.line(name(op.output) + "[k + " + half + "] = " + name(x) + "[k];");
    out.close();
  }

  // rotate_pairs along the row: y[col] = -x[col + 1] at even columns, x[col - 1] at odd ones.
  // A chunk starts at an even column and holds an even number of them, so k's parity is its
  // column's and k ^ 1 is the neighbour in the same lane.
  void rotatePairs(const graph::BlockOp& op) {
    CudaWriter& out = context_.out;
    const TensorId x = op.inputs[0];
    out.line("float " + name(op.output) + "[" + str(rows_.perLane) + "];");
    out.line("#pragma unroll");
    out.open("for (int k = 0; k < " + str(rows_.perLane) + "; k += 2)");
    out.line(name(op.output) + "[k] = -" + name(x) + "[k + 1];");
    out.line(name(op.output) + "[k + 1] = " + name(x) + "[k];");
    out.close();
  }

  const EmitContext& context_;
  const KernelPlan& plan_;
  const graph::BlockGraph& block_;
  const plan::RowOwnedPlan& rows_;
  std::vector<bool> full_;  // per tile: whether it spans the row (else 1 along it)
  Index4 index_{"0", "0", "0", "0"};
};

}  // namespace

void emitRowOwnedBody(const EmitContext& context) {
  RowOwnedEmitter(context).emit();
}

}  // namespace mugraph::codegen
