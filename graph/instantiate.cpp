// instantiate(): the one definition of a dynamic program or schedule at a length. Extents
// come from the values, derived shapes from shape inference (predefined ops) or from the
// output ops' placement and the grid (block graphs), and each block graph's grid and trip
// count from the declared tiles of its dynamic cuts (graph/tile_splits.h has the partial-tile
// rules the result then obeys). Block tile shapes never change.
#include <optional>

#include "graph/dynamic_dims.h"
#include "graph/error.h"
#include "graph/shape_inference.h"
#include "graph/validate.h"

namespace mugraph::graph {
namespace {

// A count a block graph needs, set by the first cut that speaks of it; a second cut that
// needs another value makes the length unreachable.
void setCount(std::optional<int64_t>& slot, int64_t value, const std::string& what) {
  if (value == 0) return;
  if (slot && *slot != value) {
    throw UserError("", what + " would need " + std::to_string(*slot) + " and " +
                            std::to_string(value) + " at once (cuts of different dims disagree)");
  }
  slot = value;
}

// Recomputes the grid and trip count of `kernel` (of `graph`, the dynamic graph) at `values`.
void recount(const KernelGraph& graph, KernelOp& kernel, const DimValues& values) {
  BlockGraph& block = *kernel.block;
  std::array<std::optional<int64_t>, kGridAxes> grid;
  std::optional<int64_t> forloop;
  for (const DynamicCut& cut : blockDynamicCuts(graph, kernel)) {
    const DynamicDim& dim = graph.dims.at(cut.dim);
    if (cut.tile < 1) {
      throw UserError("", "kernel '" + kernel.name + "' cuts dynamic dim '" + dim.name +
                              "' without a declared tile (not length-independent)");
    }
    const int64_t n = values.at(dim.name);
    const CutCounts counts = cutCounts(cut, n);
    const std::string where =
        "kernel '" + kernel.name + "' at " + dim.name + "=" + std::to_string(n) + ": ";
    if (cut.gridAxis != kReplicated) {
      setCount(grid[cut.gridAxis], counts.parts, where + "grid." + gridAxisName(cut.gridAxis));
    }
    setCount(forloop, counts.forloop, where + "forloop");
  }
  for (int axis = 0; axis < kGridAxes; ++axis) {
    if (grid[axis]) block.grid[axis] = *grid[axis];
  }
  if (forloop) block.forloop = *forloop;
}

void inferResults(KernelGraph& graph, KernelOp& op) {
  if (op.kind != OpKind::BlockGraph) {
    std::vector<Operand> operands;
    for (TensorId t : op.inputs) {
      const TensorDesc& d = graph.tensors.at(t);
      operands.push_back(Operand{d.name, d.dtype, d.shape});
    }
    const Inferred inferred = inferOp(op.kind, op.attrs, operands);
    checkWholeTensorAttrs(op.kind, op.attrs, operands.at(0));
    graph.tensors.at(op.outputs.at(0)).shape = inferred.shape;
    return;
  }
  const BlockGraph& block = *op.block;
  std::vector<Dims> inputShapes;
  for (TensorId t : op.inputs) inputShapes.push_back(graph.tensors.at(t).shape);
  const std::vector<TileSplit> splits = blockTileSplits(block, inputShapes);
  for (const BlockOp& out : block.ops) {
    if (out.kind != OpKind::Output) continue;
    const BlockTensor& tile = block.tensors.at(out.inputs.at(0));
    graph.tensors.at(op.outputs.at(out.kernelTensor)).shape =
        outputDeviceShape(tile.shape, tile.name, block, out, &splits.at(out.inputs.at(0)));
  }
}

void checkValues(const KernelGraph& graph, const DimValues& values, const std::string& what) {
  for (const auto& [name, value] : values) {
    if (!findDim(graph, name)) {
      std::string known;
      for (const DynamicDim& d : graph.dims) known += (known.empty() ? "" : ", ") + d.name;
      throw UserError("", what + " has no dynamic dim '" + name + "'" +
                              (known.empty() ? " (it has none)" : " (it has " + known + ")"));
    }
  }
  for (const DynamicDim& d : graph.dims) {
    auto value = values.find(d.name);
    if (value == values.end()) {
      throw UserError("", what + " needs a length for dynamic dim '" + d.name + "' (--dim " +
                              d.name + "=N, N in [" + std::to_string(d.min) + ", " +
                              std::to_string(d.max) + "])");
    }
    if (value->second < d.min || value->second > d.max) {
      throw UserError("", d.name + "=" + std::to_string(value->second) + " is outside the range [" +
                              std::to_string(d.min) + ", " + std::to_string(d.max) +
                              "] of dynamic dim '" + d.name + "'");
    }
  }
}

KernelGraph instantiateGraph(const KernelGraph& graph, const DimValues& values,
                             const std::string& what) {
  checkValues(graph, values, what);
  KernelGraph result = graph;
  for (TensorDesc& t : result.tensors) {
    for (size_t d = 0; d < t.dynamicDims.size(); ++d) {
      if (t.dynamicDims[d] != kStaticDim) t.shape[d] = values.at(graph.dims[t.dynamicDims[d]].name);
    }
  }
  const std::string at = what + " at " + dimValuesText(values) + ": ";
  try {
    for (KernelOp& op : result.ops) {
      if (op.kind == OpKind::BlockGraph && op.block) recount(graph, op, values);
      inferResults(result, op);
    }
  } catch (const ShapeError& e) {
    throw UserError("", at + e.what());
  } catch (const UserError& e) {
    throw UserError(e.where(), at + e.reason());
  }
  result.dims.clear();
  for (TensorDesc& t : result.tensors) t.dynamicDims.clear();
  return result;
}

std::string irErrorText(const IrError& e) {
  const IrLocation& at = e.location();
  std::string where = at.section;
  if (at.index >= 0) where += "[" + std::to_string(at.index) + "]";
  if (at.blockOp >= 0) where += ".ops[" + std::to_string(at.blockOp) + "]";
  if (!at.field.empty()) where += "." + at.field;
  return where + ": " + e.what();
}

}  // namespace

KernelGraph instantiate(const KernelGraph& graph, const DimValues& values) {
  const std::string what = "graph '" + graph.name + "'";
  KernelGraph result = instantiateGraph(graph, values, what);
  try {
    if (result.isProgram()) {
      validateProgram(result);
    } else {
      validateKernelGraph(result);
    }
  } catch (const IrError& e) {
    throw UserError("", what + " at " + dimValuesText(values) + ": " + irErrorText(e));
  }
  return result;
}

Schedule instantiate(const Schedule& schedule, const DimValues& values) {
  const std::string what = "schedule '" + schedule.name + "'";
  Schedule result{schedule.name, instantiateGraph(schedule.program, values, what),
                  instantiateGraph(schedule.graph, values, what)};
  try {
    validateSchedule(result);
  } catch (const IrError& e) {
    throw UserError("", what + " at " + dimValuesText(values) + ": " + irErrorText(e));
  }
  return result;
}

}  // namespace mugraph::graph
