// The record of dynamic dims: declarations, how records follow ops, validation, and how a
// block graph's cuts of a dynamic dim turn a length into grid parts and loop trips.
#include "graph/dynamic_dims.h"

#include <charconv>

#include "graph/dynamic_extents.h"
#include "graph/error.h"
#include "graph/syntax.h"

namespace mugraph::graph {
namespace {

[[noreturn]] void fail(const std::string& section, int index, int blockOp, const std::string& field,
                       const std::string& reason) {
  throw IrError(IrLocation{section, index, blockOp, field}, reason);
}

std::vector<int> recordOf(const TensorDesc& tensor) {
  std::vector<int> record(tensor.shape.size(), kStaticDim);
  for (size_t d = 0; d < record.size(); ++d) record[d] = dynamicDimOf(tensor, static_cast<int>(d));
  return record;
}

// Static records are empty, so static graphs compare and hash as before.
std::vector<int> normalized(std::vector<int> record) {
  for (int dim : record) {
    if (dim != kStaticDim) return record;
  }
  return {};
}

std::vector<int> predefinedResult(const KernelGraph& graph, const KernelOp& op) {
  const TensorDesc& a = graph.tensors.at(op.inputs.at(0));
  std::vector<int> result = recordOf(a);
  const OpInfo& info = opInfo(op.kind);
  if (info.opClass == OpClass::Matmul) {
    const TensorDesc& b = graph.tensors.at(op.inputs.at(1));
    result.back() = dynamicDimOf(b, static_cast<int>(b.shape.size()) - 1);
  } else if (info.opClass == OpClass::Binary) {
    const TensorDesc& b = graph.tensors.at(op.inputs.at(1));
    // A broadcast size-1 dim takes its partner's record.
    for (size_t d = 0; d < result.size() && d < b.shape.size(); ++d) {
      const int fromB = dynamicDimOf(b, static_cast<int>(d));
      if (a.shape[d] == 1 && b.shape[d] != 1) {
        result[d] = fromB;
      } else if (!(b.shape[d] == 1 && a.shape[d] != 1) && result[d] == kStaticDim) {
        result[d] = fromB;
      }
    }
  } else if (info.opClass == OpClass::Reduction && !keepsShape(op.kind)) {
    if (op.attrs.dim >= 0 && op.attrs.dim < static_cast<int>(result.size())) {
      result[op.attrs.dim] = kStaticDim;
    }
  }
  return normalized(std::move(result));
}

std::vector<std::vector<int>> blockResults(const KernelGraph& graph, const KernelOp& kernel) {
  const BlockGraph& block = *kernel.block;
  std::vector<std::vector<int>> results(kernel.outputs.size());
  for (const BlockOp& out : block.ops) {
    if (out.kind != OpKind::Output || out.kernelTensor < 0 ||
        out.kernelTensor >= static_cast<int>(results.size())) {
      continue;
    }
    std::vector<int> record(block.tensors.at(out.inputs.at(0)).shape.size(), kStaticDim);
    for (int axis = 0; axis < kGridAxes; ++axis) {
      const int dim = out.omap[axis];
      if (dim < 0 || dim >= static_cast<int>(record.size())) continue;
      for (const BlockOp& in : block.ops) {
        if (in.kind != OpKind::Input || in.imap[axis] == kReplicated) continue;
        // Cut by the loop too, the axis counts fixed parts (split-KV): a static dim.
        if (in.fmap == in.imap[axis]) continue;
        const TensorDesc& source = graph.tensors.at(kernel.inputs.at(in.kernelTensor));
        const int found = dynamicDimOf(source, in.imap[axis]);
        if (found != kStaticDim) record[dim] = found;
      }
    }
    results[out.kernelTensor] = normalized(std::move(record));
  }
  return results;
}

void validateDeclarations(const KernelGraph& graph, const std::string& prefix) {
  std::vector<DynamicDim> earlier;
  for (size_t i = 0; i < graph.dims.size(); ++i) {
    const DynamicDim& dim = graph.dims[i];
    if (auto problem = dimDeclarationProblem(dim.name, dim.min, dim.max, earlier)) {
      fail(prefix + "dims", static_cast<int>(i), -1, problem->field, problem->reason);
    }
    if (graph.findTensor(dim.name)) {
      fail(prefix + "dims", static_cast<int>(i), -1, "name",
           "dim '" + dim.name + "' has the name of a tensor");
    }
    earlier.push_back(dim);
  }
}

void validateRecords(const KernelGraph& graph, const std::string& prefix) {
  for (size_t i = 0; i < graph.tensors.size(); ++i) {
    const TensorDesc& t = graph.tensors[i];
    const int index = static_cast<int>(i);
    if (t.dynamicDims.empty()) continue;
    if (t.dynamicDims.size() != t.shape.size()) {
      fail(prefix + "tensors", index, -1, "shape",
           "tensor '" + t.name + "' records dynamic dims for a different rank");
    }
    for (size_t d = 0; d < t.shape.size(); ++d) {
      const int dim = t.dynamicDims[d];
      if (dim == kStaticDim) continue;
      const std::string field = "shape[" + std::to_string(d) + "]";
      if (dim < 0 || dim >= static_cast<int>(graph.dims.size())) {
        fail(prefix + "tensors", index, -1, field, "tensor '" + t.name + "' names no declared dim");
      }
      if (t.shape[d] != graph.dims[dim].max) {
        fail(prefix + "tensors", index, -1, field,
             "tensor '" + t.name + "' dim " + std::to_string(d) + " is dynamic dim '" +
                 graph.dims[dim].name + "' but its extent is " + std::to_string(t.shape[d]) +
                 " (a dynamic extent is stored as the range's max, " +
                 std::to_string(graph.dims[dim].max) + ")");
      }
    }
  }
}

std::string recordText(const KernelGraph& graph, const std::vector<int>& record) {
  if (record.empty()) return "none";
  std::string text;
  for (size_t d = 0; d < record.size(); ++d) {
    if (record[d] == kStaticDim) continue;
    text +=
        (text.empty() ? "" : ", ") + graph.dims.at(record[d]).name + " at dim " + std::to_string(d);
  }
  return text;
}

void validateCuts(const KernelGraph& graph, const KernelOp& kernel, const std::string& section,
                  int k) {
  const BlockGraph& block = *kernel.block;
  for (size_t i = 0; i < block.ops.size(); ++i) {
    const BlockOp& op = block.ops[i];
    if (op.kind != OpKind::Input) continue;
    const TensorDesc& source = graph.tensors.at(kernel.inputs.at(op.kernelTensor));
    for (int d = 0; d < static_cast<int>(source.shape.size()); ++d) {
      const int dim = dynamicDimOf(source, d);
      if (dim == kStaticDim) continue;
      const std::string what = "dim " + std::to_string(d) + " of '" + source.name +
                               "' is dynamic dim '" + graph.dims.at(dim).name + "'";
      bool cut = op.fmap == d;
      for (int axis = 0; axis < kGridAxes; ++axis) cut = cut || op.imap[axis] == d;
      if (!cut) {
        fail(section, k, static_cast<int>(i), "imap",
             what + " but kernel '" + kernel.name +
                 "' cuts it neither by the grid nor by the for-loop: its tile would change with "
                 "the length, so the schedule is not length-independent");
      }
      if (op.tile.empty()) {
        fail(section, k, static_cast<int>(i), "tile",
             what + " but kernel '" + kernel.name +
                 "' cuts it without a declared tile: the schedule is not length-independent "
                 "(declare the tile, BlockOp::tile)");
      }
    }
  }
}

}  // namespace

int dynamicDimOf(const TensorDesc& tensor, int dim) {
  if (dim < 0 || dim >= static_cast<int>(tensor.dynamicDims.size())) return kStaticDim;
  return tensor.dynamicDims[dim];
}

std::optional<int> findDim(const KernelGraph& graph, std::string_view name) {
  for (size_t i = 0; i < graph.dims.size(); ++i) {
    if (graph.dims[i].name == name) return static_cast<int>(i);
  }
  return std::nullopt;
}

std::optional<DimProblem> dimDeclarationProblem(std::string_view name, int64_t min, int64_t max,
                                                const std::vector<DynamicDim>& declared) {
  const std::string quoted = "'" + std::string(name) + "'";
  if (!isTensorName(name))
    return DimProblem{"name", "dim name " + quoted + " is not an identifier"};
  for (const DynamicDim& d : declared) {
    if (d.name == name) return DimProblem{"name", "dim " + quoted + " is declared twice"};
  }
  if (min < 1) {
    return DimProblem{"min",
                      "dim " + quoted + " has min " + std::to_string(min) + " (must be >= 1)"};
  }
  if (min > max) {
    return DimProblem{"max", "dim " + quoted + " has min " + std::to_string(min) + " > max " +
                                 std::to_string(max)};
  }
  if (max > kMaxDimSize) {
    return DimProblem{"max", "dim " + quoted + " has max above " + std::to_string(kMaxDimSize)};
  }
  return std::nullopt;
}

std::vector<std::vector<int>> resultDynamicDims(const KernelGraph& graph, const KernelOp& op) {
  if (op.kind == OpKind::BlockGraph && op.block) return blockResults(graph, op);
  return {predefinedResult(graph, op)};
}

void validateDynamicDims(const KernelGraph& graph, const std::string& prefix) {
  validateRecords(graph, prefix);  // a record naming a dim of a graph without dims fails here
  if (graph.dims.empty()) return;  // static: nothing more to check (the search validates often)
  validateDeclarations(graph, prefix);
  const std::string section = prefix + (graph.isProgram() ? "ops" : "kernels");
  for (size_t k = 0; k < graph.ops.size(); ++k) {
    const KernelOp& op = graph.ops[k];
    const std::vector<std::vector<int>> derived = resultDynamicDims(graph, op);
    for (size_t i = 0; i < op.outputs.size() && i < derived.size(); ++i) {
      const TensorDesc& out = graph.tensors.at(op.outputs[i]);
      if (normalized(out.dynamicDims) != derived[i]) {
        fail(section, static_cast<int>(k), -1, "outputs",
             "tensor '" + out.name + "' records dynamic dims (" +
                 recordText(graph, normalized(out.dynamicDims)) + ") but its op gives (" +
                 recordText(graph, derived[i]) + ")");
      }
    }
    if (op.kind == OpKind::BlockGraph && op.block) {
      validateCuts(graph, op, section, static_cast<int>(k));
    }
  }
}

DimValues referenceValues(const KernelGraph& graph) {
  DimValues values;
  for (const DynamicDim& d : graph.dims) values[d.name] = d.max;
  return values;
}

std::string dimValuesText(const DimValues& values) {
  std::string text;
  for (const auto& [name, value] : values) {
    text += (text.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  }
  return text;
}

std::pair<std::string, int64_t> parseDimValue(std::string_view text, const std::string& where) {
  const size_t eq = text.find('=');
  const std::string name(text.substr(0, eq == std::string_view::npos ? text.size() : eq));
  int64_t value = 0;
  if (eq != std::string_view::npos) {
    const char* begin = text.data() + eq + 1;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec == std::errc() && ptr == end && begin != end && isTensorName(name)) {
      return {name, value};
    }
  }
  throw UserError(where, "expected NAME=LENGTH (e.g. s=100), got '" + std::string(text) + "'");
}

CutCounts cutCounts(const DynamicCut& cut, int64_t n) {
  CutCounts counts;
  const bool grid = cut.gridAxis != kReplicated;
  // A cut by the grid or the loop alone: the count kernels that take the lengths compute.
  const LaunchCount single{1, cut.dim, cut.tile};
  if (grid && !cut.loop) counts.parts = single.at(n);
  if (cut.loop && !grid) counts.forloop = single.at(n);
  if (cut.loop && grid) {
    // Split-KV: the schedule fixes the parts and the tile, the trips follow; at a length that
    // needs fewer parts, the last ones are empty (graph/tile_splits.h).
    counts.parts = cut.parts;
    counts.forloop = LaunchCount{1, cut.dim, cut.parts * cut.tile}.at(n);
  }
  return counts;
}

std::vector<DynamicCut> blockDynamicCuts(const KernelGraph& graph, const KernelOp& kernel) {
  std::vector<DynamicCut> cuts;
  if (kernel.kind != OpKind::BlockGraph || !kernel.block) return cuts;
  const BlockGraph& block = *kernel.block;
  for (const BlockOp& op : block.ops) {
    if (op.kind != OpKind::Input) continue;
    const TensorDesc& source = graph.tensors.at(kernel.inputs.at(op.kernelTensor));
    for (int d = 0; d < static_cast<int>(source.shape.size()); ++d) {
      DynamicCut cut;
      cut.dim = dynamicDimOf(source, d);
      if (cut.dim == kStaticDim) continue;
      for (int axis = 0; axis < kGridAxes; ++axis) {
        if (op.imap[axis] == d) cut.gridAxis = axis;
      }
      cut.loop = op.fmap == d;
      cut.tile = op.tile.empty() ? 0 : op.tile[d];
      cut.parts = cut.gridAxis == kReplicated ? 1 : block.grid[cut.gridAxis];
      bool seen = false;
      for (const DynamicCut& c : cuts) {
        seen = seen || (c.dim == cut.dim && c.gridAxis == cut.gridAxis && c.loop == cut.loop &&
                        c.tile == cut.tile && c.parts == cut.parts);
      }
      if (!seen) cuts.push_back(cut);
    }
  }
  return cuts;
}

std::vector<DynamicCut> dynamicCuts(const KernelGraph& graph) {
  std::vector<DynamicCut> cuts;
  for (const KernelOp& op : graph.ops) {
    for (const DynamicCut& cut : blockDynamicCuts(graph, op)) cuts.push_back(cut);
  }
  return cuts;
}

}  // namespace mugraph::graph
