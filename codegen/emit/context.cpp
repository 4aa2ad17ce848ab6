// Names and element addressing shared by the emitter's files (see context.h).
#include "codegen/emit/context.h"

#include <cmath>
#include <cstdio>
#include <set>

namespace mugraph::codegen {
namespace {

bool isSimple(const std::string& expression) {
  for (char c : expression) {
    const bool plain =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!plain) return false;
  }
  return true;
}

const SharedTile& layoutOf(const plan::GeneralPlan& general, graph::TensorId tile) {
  if (general.home[tile] == TileHome::Registers) return *general.materialized[tile];
  return general.shared[tile];
}

// Row-major or transposed position of `index` in `layout`, swizzled where the layout is.
std::string elementIndex(const SharedTile& layout, const Index4& index) {
  const Extent4& e = layout.extent;
  std::string row;
  std::string col;
  if (layout.transposed) {
    row = linearExpression({{index[0], e[1] * e[3]}, {index[1], e[3]}, {index[3], 1}});
    col = index[2];
  } else {
    row = linearExpression({{index[0], e[1] * e[2]}, {index[1], e[2]}, {index[2], 1}});
    col = index[3];
  }
  if (layout.swizzleMask == 0) return linearExpression({{row, layout.cols}, {col, 1}});
  const int chunkElements = static_cast<int>(16 / graph::dtypeBytes(layout.dtype));
  return "mg::swizzle<" + std::to_string(chunkElements) + ">(" + row + ", " + col + ", " +
         std::to_string(layout.cols) + ", " + std::to_string(layout.swizzleMask) + ")";
}

Index4 broadcastTo(const SharedTile& layout, const Index4& index) {
  Index4 clamped = index;
  for (int d = 0; d < graph::kMaxRank; ++d) {
    if (layout.extent[d] == 1) clamped[d] = "0";
  }
  return clamped;
}

const char* kIndexNames[graph::kMaxRank] = {"i0", "i1", "i2", "i3"};

}  // namespace

void openStridedLoop(const EmitContext& context, const std::string& variable,
                     const std::string& start, int64_t count, int64_t stride, int64_t maxUnrolled) {
  const int64_t trips = (count + stride - 1) / stride;
  if (trips > maxUnrolled) {
    context.out.open("for (int " + variable + " = " + start + "; " + variable + " < " +
                     std::to_string(count) + "; " + variable + " += " + std::to_string(stride) +
                     ")");
    return;
  }
  const std::string trip = variable + "_trip";
  context.out.line("#pragma unroll");
  context.out.open("for (int " + trip + " = 0; " + trip + " < " + std::to_string(trips) + "; ++" +
                   trip + ")");
  context.out.line("const int " + variable + " = " + start + " + " + trip + " * " +
                   std::to_string(stride) + ";");
  if (count % stride != 0) {
    context.out.line("if (" + variable + " >= " + std::to_string(count) + ") break;");
  }
}

Index4 openElementLoop(const EmitContext& context, const Extent4& extent,
                       const std::string& variable, const std::string& start, int64_t stride) {
  const int64_t count = extent[0] * extent[1] * extent[2] * extent[3];
  if (stride == 0) stride = context.threads();
  openStridedLoop(context, variable, start, count, stride, 0);
  return nameElementIndex(context, extent, variable);
}

Index4 nameElementIndex(const EmitContext& context, const Extent4& extent,
                        const std::string& variable) {
  const int64_t count = extent[0] * extent[1] * extent[2] * extent[3];
  Index4 index{"0", "0", "0", "0"};
  int64_t inner = count;
  for (int d = 0; d < graph::kMaxRank; ++d) {
    if (extent[d] == 1) continue;
    const bool outermost = inner == count;
    inner /= extent[d];
    std::string expression = variable;
    if (inner != 1) expression += " / " + std::to_string(inner);
    if (!outermost) expression = "(" + expression + ") % " + std::to_string(extent[d]);
    context.out.line("const int " + std::string(kIndexNames[d]) + " = " + expression + ";");
    index[d] = kIndexNames[d];
  }
  return index;
}

std::string wideIndex(const std::string& index) {
  return index == "0" ? index : "static_cast<long long>(" + index + ")";
}

std::string storageType(graph::DType dtype) {
  switch (dtype) {
    case graph::DType::F16:
      return "mg::f16";
    case graph::DType::BF16:
      return "mg::bf16";
    case graph::DType::F32:
      return "float";
  }
  return "float";
}

std::string floatLiteral(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  std::string text = buffer;
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text + "f";
}

std::string linearExpression(const std::vector<std::pair<std::string, int64_t>>& terms) {
  std::vector<std::pair<std::string, std::string>> printed;
  for (const auto& [expression, stride] : terms)
    printed.emplace_back(expression, std::to_string(stride));
  return linearExpression(printed);
}

std::string linearExpression(const std::vector<std::pair<std::string, std::string>>& terms) {
  std::string text;
  for (const auto& [expression, stride] : terms) {
    if (expression == "0" || stride == "0") continue;
    if (!text.empty()) text += " + ";
    const std::string operand = isSimple(expression) ? expression : "(" + expression + ")";
    text += stride == "1" ? operand : operand + " * " + stride;
  }
  return text.empty() ? "0" : text;
}

std::string EmitContext::product(const graph::DimProduct& value) const {
  if (value.isStatic()) return std::to_string(value.coefficient);
  std::string text = value.coefficient == 1 ? "" : std::to_string(value.coefficient) + "LL";
  for (int dim : value.dims) {
    const std::string length = dimParamName(plan.graph->dims.at(dim).name);
    text += text.empty() ? "static_cast<long long>(" + length + ")" : " * " + length;
  }
  return "(" + text + ")";
}

std::string EmitContext::forloop() const {
  if (plan.launchCounts && !plan.launchCounts->forloop.isStatic()) return "mg_forloop";
  return std::to_string(block().forloop);
}

std::string EmitContext::count(const graph::LaunchCount& count) const {
  if (count.isStatic()) return std::to_string(count.constant);
  const std::string tile = std::to_string(count.tile);
  return "(" + dimParamName(plan.graph->dims.at(count.dim).name) + " + " + tile + " - 1) / " + tile;
}

std::string EmitContext::extent(const graph::DimSplit& cut) const {
  if (cut.dynamicDim == graph::kStaticDim) return std::to_string(cut.extent);
  return dimParamName(plan.graph->dims.at(cut.dynamicDim).name);
}

std::string EmitContext::blockTile(const graph::DimSplit& cut) const {
  if (cut.partFollowsLength()) return "(" + forloop() + " * " + std::to_string(cut.tile) + ")";
  return std::to_string(cut.blockTile);
}

std::string EmitContext::tileName(graph::TensorId tile) const {
  if (general().home[tile] == TileHome::Registers) return materializedName(tile);
  return "t" + std::to_string(tile) + "_" + sanitizeIdentifier(block().tensors[tile].name);
}

std::string EmitContext::registersName(graph::TensorId tile) const {
  return "r" + std::to_string(tile) + "_" + sanitizeIdentifier(block().tensors[tile].name);
}

std::string EmitContext::materializedName(graph::TensorId tile) const {
  return "m" + std::to_string(tile) + "_" + sanitizeIdentifier(block().tensors[tile].name);
}

std::string EmitContext::factorName(graph::TensorId max) const {
  return "s" + std::to_string(max) + "_" + sanitizeIdentifier(block().tensors[max].name);
}

std::string EmitContext::paramName(int param) const {
  const graph::TensorId tensor = kernel.params[param].tensor;
  return "p" + std::to_string(param) + "_" + sanitizeIdentifier(plan.graph->tensors[tensor].name);
}

std::string EmitContext::sharedIndex(graph::TensorId tile, const Index4& index) const {
  return elementIndex(layoutOf(general(), tile), index);
}

std::string EmitContext::readShared(graph::TensorId tile, const Index4& index) const {
  const Index4 clamped = broadcastTo(layoutOf(general(), tile), index);
  return "mg::to_f32(" + tileName(tile) + "[" + sharedIndex(tile, clamped) + "])";
}

std::string EmitContext::factorElement(graph::TensorId max, const Index4& index) const {
  const SharedTile& layout = *general().rescaleFactors[max];
  return factorName(max) + "[" + elementIndex(layout, broadcastTo(layout, index)) + "]";
}

namespace {

// Real elements of a partial dim cut `cut` at `iteration`, computed in place. A dynamic dim's
// extent is its length parameter, and so is the part of a cut by the loop alone.
std::string realExtentExpression(const EmitContext& context, const graph::DimSplit& cut,
                                 const std::string& iteration, const char* const* kBlock) {
  const std::string extent = context.extent(cut);
  std::string blockTile = context.blockTile(cut);
  if (cut.dynamicDim != graph::kStaticDim && cut.gridAxis == graph::kReplicated) {
    blockTile = extent;
  }
  return "mg::tile_extent(" + extent + ", " + blockTile + ", " + std::to_string(cut.tile) + ", " +
         (cut.gridAxis == graph::kReplicated ? "0" : kBlock[cut.gridAxis]) + ", " +
         (cut.loop ? iteration : "0") + ")";
}

std::string realExtentName(graph::TensorId tile, size_t dim) {
  return "real_t" + std::to_string(tile) + "_d" + std::to_string(dim);
}

}  // namespace

void declareRealExtents(const EmitContext& context, bool loopDependent) {
  for (size_t t = 0; t < context.plan.splits.size(); ++t) {
    const graph::TileSplit& split = context.plan.splits[t];
    for (size_t d = 0; d < split.size(); ++d) {
      if (!context.partialHere(split[d]) || split[d].loop != loopDependent) continue;
      context.out.line("const int " + realExtentName(static_cast<graph::TensorId>(t), d) + " = " +
                       realExtentExpression(context, split[d], "it", context.blockIndex) + ";");
    }
  }
}

std::string wholeLoopCondition(const EmitContext& context) {
  std::set<std::string> terms;
  bool followsLength = false;
  for (const graph::TileSplit& split : context.plan.splits) {
    for (const graph::DimSplit& cut : split) {
      if (!cut.partial() || !cut.loop) continue;
      followsLength = followsLength || cut.dynamicDim != graph::kStaticDim;
      terms.insert(realExtentExpression(context, cut, "(" + context.forloop() + " - 1)",
                                        context.blockIndex) +
                   " == " + std::to_string(cut.tile));
    }
  }
  if (!followsLength) return "";
  std::string condition;
  for (const std::string& term : terms) condition += (condition.empty() ? "" : " && ") + term;
  return condition;
}

bool declareBlockIterations(const EmitContext& context, const std::string& part) {
  const std::optional<graph::DimSplit>& loop = context.plan.shortenedLoop;
  if (!loop) return false;
  context.out.line("const int mg_iterations = mg::part_iterations(" + context.extent(*loop) + ", " +
                   context.blockTile(*loop) + ", " + std::to_string(loop->tile) + ", " + part +
                   ", " + context.forloop() + ");");
  return true;
}

std::string EmitContext::realExtent(graph::TensorId tile, int dim,
                                    const std::string& iteration) const {
  const graph::TileSplit& split = plan.splits.at(tile);
  const int pad = graph::kMaxRank - static_cast<int>(split.size());
  if (dim < pad) return "1";
  const graph::DimSplit& cut = split[dim - pad];
  if (!partialHere(cut)) return std::to_string(cut.tile);
  // Declared once per block (grid cuts) or per iteration (loop cuts): see declareRealExtents.
  if (!cut.loop || iteration == "it") return realExtentName(tile, static_cast<size_t>(dim - pad));
  return realExtentExpression(*this, cut, iteration, blockIndex);
}

bool EmitContext::partialHere(const graph::DimSplit& cut) const {
  return cut.partial() && !(wholeLoopTiles && cut.loop);
}

std::string EmitContext::tileStart(graph::TensorId tile, int dim,
                                   const std::string& iteration) const {
  const graph::TileSplit& split = plan.splits.at(tile);
  const int pad = graph::kMaxRank - static_cast<int>(split.size());
  if (dim < pad) return "0";
  const graph::DimSplit& cut = split[dim - pad];
  std::string start;
  if (cut.gridAxis != graph::kReplicated) {
    start = std::string(blockIndex[cut.gridAxis]) + " * " + blockTile(cut);
  }
  if (cut.loop && iteration != "0") {
    start += (start.empty() ? "" : " + ") + iteration + " * " + std::to_string(cut.tile);
  }
  return start.empty() ? "0" : "(" + start + ")";
}

std::string EmitContext::causalMask(const graph::BlockOp& op, const std::string& x,
                                    const std::string& row, const std::string& col,
                                    const std::string& iteration) const {
  const graph::TensorId tile = op.inputs[0];
  const std::string kept = op.attrs.queries > 0 ? "mg::causal_kept(" : "mg::causal_kept_rows(";
  return "(" + kept + tileStart(tile, graph::kMaxRank - 2, iteration) + " + (" + row + "), " +
         tileStart(tile, graph::kMaxRank - 1, iteration) + " + (" + col + "), " + causalShape(op) +
         ") ? " + x + " : mg::negative_infinity())";
}

std::string EmitContext::causalShape(const graph::BlockOp& op) const {
  const graph::TileSplit& split = plan.splits.at(op.inputs[0]);
  const std::string queries =
      op.attrs.queries > 0 ? std::to_string(op.attrs.queries) : extent(split.end()[-2]);
  return extent(split.back()) + ", " + queries;
}

std::string EmitContext::realCondition(graph::TensorId tile, const Index4& index,
                                       const std::string& iteration) const {
  const graph::TileSplit& split = plan.splits.at(tile);
  const int pad = graph::kMaxRank - static_cast<int>(split.size());
  std::string condition;
  for (size_t d = 0; d < split.size(); ++d) {
    if (!partialHere(split[d]) || index[pad + d] == "0") continue;
    if (!condition.empty()) condition += " && ";
    condition +=
        "(" + index[pad + d] + ") < " + realExtent(tile, pad + static_cast<int>(d), iteration);
  }
  return condition;
}

}  // namespace mugraph::codegen
