// The epilogue of the warpgroup emitters: the GEMM's element-wise ops applied to the
// accumulators in registers, then the consumers' accumulators stored to the output tensor
// (see warpgroup_printer.h). A 16-bit result goes through each warp's staging buffer,
// 16 rows at a time: pairs in (16-byte chunk c of row r at c ^ (r & 7), so the eight rows a
// store instruction touches hit distinct banks), then each row out as 16-byte stores. An f32
// result is stored from registers in pairs.
#include "codegen/emit/warpgroup_printer.h"

#include <map>

namespace mugraph::codegen {
namespace {

// Element offset of the block's output tile (context.h's baseOffset with the tile's
// coordinates in place of blockIdx).
std::string tileOffset(const EmitContext& context, const plan::GridSteps& blockStep) {
  std::string text;
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (blockStep[axis].coefficient == 0) continue;
    text += (text.empty() ? "" : " + ") + std::string("static_cast<long long>(") +
            kWarpgroupTile[axis] + ") * " + context.product(blockStep[axis]);
  }
  return text.empty() ? "0" : text;
}

// Real rows (dimFromEnd 2) or columns (1) of output tile `tile` in the block's tile (kTile),
// or "" where that dim is not partial: past them the copy engine read zeros and nothing may
// be stored (graph/tile_splits.h).
std::string realOutputExtent(const KernelPlan& plan, graph::TensorId tile, int dimFromEnd) {
  const graph::TileSplit& split = plan.splits.at(tile);
  const graph::DimSplit& cut = split.at(split.size() - static_cast<size_t>(dimFromEnd));
  if (!cut.partial()) return "";
  // A dynamic dim's extent is its length parameter (a grid cut: the part is its declared tile).
  const std::string extent = cut.dynamicDim == graph::kStaticDim
                                 ? std::to_string(cut.extent)
                                 : dimParamName(plan.graph->dims.at(cut.dynamicDim).name);
  return "mg::tile_extent(" + extent + ", " + std::to_string(cut.blockTile) + ", " +
         std::to_string(cut.tile) + ", " +
         (cut.gridAxis == graph::kReplicated ? "0" : kWarpgroupTile[cut.gridAxis]) + ", 0)";
}

// Opens the unrolled loops over a consumer's accumulator fragments: m tile t, 8-column group
// j, then `inner` over `innerCount` (h: the two 8-row halves; r: the four elements).
void openFragmentLoops(CudaWriter& out, int mTiles, int64_t n, const std::string& inner,
                       int innerCount) {
  out.line("#pragma unroll");
  out.open("for (int t = 0; t < " + std::to_string(mTiles) + "; ++t)");
  out.line("#pragma unroll");
  out.open("for (int j = 0; j < " + std::to_string(n / 8) + "; ++j)");
  out.line("#pragma unroll");
  out.open("for (int " + inner + " = 0; " + inner + " < " + std::to_string(innerCount) + "; ++" +
           inner + ")");
}

}  // namespace

void WarpgroupPrinter::storeAccumulators(int outputOp, const std::string& acc, int mTiles,
                                         int64_t n, int64_t rowsPerConsumer) const {
  const KernelPlan& plan = context_.plan;
  const plan::WarpgroupLimits& limits = ring_.limits;
  const std::string wgmmaRows = str(limits.wgmmaRows);
  const std::string rowBytes = str(limits.swizzleRowBytes);
  const graph::BlockOp& output = context_.block().ops[outputOp];
  const plan::OutputCopy& copy = *plan.outputs[outputOp];
  const graph::TensorId tensor = plan.kernel->outputs[output.kernelTensor];
  const graph::TensorDesc& dest = plan.graph->tensors[tensor];
  int param = -1;
  for (size_t p = 0; p < context_.kernel.params.size(); ++p) {
    if (context_.kernel.params[p].tensor == tensor) param = static_cast<int>(p);
  }
  const std::string rows = str(rowsPerConsumer);
  const std::string stride = context_.product(copy.globalStride[2]);
  const std::string type = storageType(dest.dtype);
  out_.line("// output " + context_.block().tensors[output.inputs[0]].name);
  out_.line(type + "* const out = " + context_.paramName(param) + " + (" +
            tileOffset(context_, copy.blockStep) + ");");
  // A partial tile stores its real rows and columns only.
  std::string realRows = realOutputExtent(plan, output.inputs[0], 2);
  std::string realCols = realOutputExtent(plan, output.inputs[0], 1);
  if (!realRows.empty()) out_.line("const int realRows = " + realRows + ";");
  if (!realCols.empty()) out_.line("const int realCols = " + realCols + ";");
  if (ring_.epilogueOffset < 0) {
    // Pairs where a row's pairs are aligned (an even row stride), else element by element.
    const bool pairs = copy.globalStride[2].coefficient % 2 == 0 && realCols.empty();
    openFragmentLoops(out_, mTiles, n, "h", 2);
    out_.line("const int row = consumer * " + rows + " + t * " + wgmmaRows +
              " + warp * 16 + (lane >> 2) + h * 8;");
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
  // Through the warp's staging buffer, 16 rows of one swizzled row at a time.
  out_.line("unsigned char* const staging = mg_smem + " + str(ring_.epilogueOffset) +
            " + (consumer * " + str(ring_.warpsPerWarpgroup()) + " + warp) * " +
            str(limits.stagingBytesPerWarp) + ";");
  out_.line("#pragma unroll");
  out_.open("for (int t = 0; t < " + str(mTiles) + "; ++t)");
  out_.line("#pragma unroll");
  const int64_t rowElements = limits.swizzleRowBytes / graph::dtypeBytes(dest.dtype);
  // n need not be whole swizzled rows (96 = 64 + 32): the last one holds n % rowElements
  // columns, and chunks past n are neither staged nor stored.
  const int64_t swizzledRows = (n + rowElements - 1) / rowElements;
  const bool ragged = n % rowElements != 0;
  const std::string past = "q * " + str(rowElements) + " + ";
  out_.open("for (int q = 0; q < " + str(swizzledRows) + "; ++q)");
  out_.line("#pragma unroll");
  out_.open("for (int jj = 0; jj < 8; ++jj)");
  if (ragged) out_.line("if (" + past + "jj * 8 >= " + str(n) + ") continue;");
  out_.line("#pragma unroll");
  out_.open("for (int h = 0; h < 2; ++h)");
  out_.line("const int r = (lane >> 2) + h * 8;");
  out_.line("const int f = 4 * (q * 8 + jj) + 2 * h;");
  out_.line("*reinterpret_cast<unsigned*>(staging + r * " + rowBytes +
            " + ((jj ^ (r & 7)) << 4) + ((lane & 3) << 2)) = mg::pack2<" + storageType(dest.dtype) +
            ">(" + acc + "[f], " + acc + "[f + 1]);");
  out_.close();
  out_.close();
  out_.line("__syncwarp();");
  out_.line("#pragma unroll");
  out_.open("for (int i = 0; i < 4; ++i)");
  out_.line("const int r = (lane >> 3) + i * 4;");
  out_.line("const int chunk = lane & 7;");
  out_.line("const int row = consumer * " + rows + " + t * " + wgmmaRows + " + warp * 16 + r;");
  const std::string at = "out + static_cast<long long>(row) * " + stride + " + q * " +
                         str(rowElements) + " + chunk * 8";
  const std::string from = "staging + r * " + rowBytes + " + ((chunk ^ (r & 7)) << 4)";
  if (!realRows.empty()) out_.line("if (row >= realRows) continue;");
  if (ragged) out_.line("if (" + past + "chunk * 8 >= " + str(n) + ") continue;");
  if (!realCols.empty()) {
    // The chunk that straddles the end goes element by element; none past it.
    out_.line("const int left = realCols - (q * " + str(rowElements) + " + chunk * 8);");
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

void WarpgroupPrinter::applyElementwiseOps(int accumulatorOp, const std::vector<int>& ops,
                                           const std::vector<int>& inputs, int outputOp,
                                           const std::string& acc, int mTiles, int64_t n,
                                           int64_t rowsPerConsumer) const {
  const KernelPlan& plan = context_.plan;
  const graph::BlockGraph& block = context_.block();
  std::map<graph::TensorId, std::string> value;  // each tile's f32 at this element
  value[block.ops[accumulatorOp].output] = "v";
  std::string names;
  for (int o : ops)
    names += (names.empty() ? "" : ", ") + std::string(graph::opName(block.ops[o].kind));
  out_.line("// epilogue: " + names);
  out_.open("");
  const graph::TensorId stored = block.ops[outputOp].inputs[0];
  const std::string realRows = realOutputExtent(plan, stored, 2);
  const std::string realCols = realOutputExtent(plan, stored, 1);
  if (!realRows.empty()) out_.line("const int realRows = " + realRows + ";");
  if (!realCols.empty()) out_.line("const int realCols = " + realCols + ";");
  // Each input's tile base, and its element at (row, col): storage order swaps the last two
  // dims of a transposed tensor; a dim of extent 1 broadcasts.
  std::vector<std::string> element;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const graph::BlockOp& input = block.ops[inputs[i]];
    const plan::InputCopy& copy = *plan.inputs[inputs[i]];
    const graph::TensorDesc& source = plan.graph->tensors[plan.kernel->inputs[input.kernelTensor]];
    const bool transposed = source.layout == graph::Layout::Transposed;
    const int rowDim = transposed ? 3 : 2;
    const int colDim = transposed ? 2 : 3;
    const std::string base = "e" + str(static_cast<int64_t>(i));
    out_.line("const " + storageType(source.dtype) + "* const " + base + " = " +
              context_.paramName(context_.kernel.inputParams[input.kernelTensor]) + " + (" +
              tileOffset(context_, copy.blockStep) + ");");
    std::vector<std::pair<std::string, std::string>> terms;
    if (copy.boxExtent[rowDim] > 1) {
      terms.push_back({"static_cast<long long>(row)", context_.product(copy.globalStride[rowDim])});
    }
    if (copy.boxExtent[colDim] > 1) {
      terms.push_back({"col", context_.product(copy.globalStride[colDim])});
    }
    element.push_back("mg::to_f32(" + base + "[" + linearExpression(terms) + "])");
  }
  const std::string rows = str(rowsPerConsumer);
  openFragmentLoops(out_, mTiles, n, "r", 4);
  out_.line("const int row = consumer * " + rows + " + t * " + str(ring_.limits.wgmmaRows) +
            " + warp * 16 + (lane >> 2) + (r >> 1) * 8;");
  out_.line("const int col = j * 8 + ((lane & 3) << 1) + (r & 1);");
  std::string inside;
  if (!realRows.empty()) inside += "row < realRows";
  if (!realCols.empty()) inside += std::string(inside.empty() ? "" : " && ") + "col < realCols";
  if (!inside.empty()) out_.line("const bool inside = " + inside + ";");
  out_.line("float& v = " + acc + "[4 * j + r];");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "x" + str(static_cast<int64_t>(i));
    // Past the real rows and columns nothing is stored, and nothing may be read.
    out_.line("const float " + name + " = " +
              (inside.empty() ? element[i] : "inside ? " + element[i] + " : 0.0f") + ";");
    value[block.ops[inputs[i]].output] = name;
  }
  for (int o : ops) {
    const graph::BlockOp& op = block.ops[o];
    std::vector<std::string> operands;
    for (graph::TensorId t : op.inputs) operands.push_back(value.at(t));
    const std::string name = "y" + str(o);
    out_.line("const float " + name + " = " + elementwiseExpression(op.kind, op.attrs, operands) +
              ";");
    value[op.output] = name;
  }
  out_.line("v = " + value.at(stored) + ";");
  out_.close();
  out_.close();
  out_.close();
  out_.close();
}

}  // namespace mugraph::codegen
