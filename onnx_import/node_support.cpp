#include "onnx_import/node_support.h"

#include <algorithm>
#include <stdexcept>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "onnx_import/model_shapes.h"
#include "onnx_import/rope_patterns.h"

namespace mugraph::onnx_import {
namespace {

using graph::Dims;
using graph::Layout;

const std::set<std::string> kComputeOps = {
    "MatMul",     "Gemm",      "Add",        "Sub", "Mul", "Div",     "Exp",
    "Sqrt",       "Sigmoid",   "Reciprocal", "Neg", "Pow", "Softmax", "ReduceSum",
    "ReduceMean", "ReduceMax", "Tanh",       "Erf", "Relu"};
const std::set<std::string> kReshapeOps = {"Reshape", "Unsqueeze", "Squeeze", "Flatten"};

NodeSupport unsupported(std::string reason) {
  return {NodeRole::Unsupported, std::move(reason), false};
}

bool isMappedOp(const std::string& op) {
  return kComputeOps.count(op) || kReshapeOps.count(op) || op == "Cast" || op == "Identity" ||
         op == "Transpose" || op == "Expand" || op == "Tile";
}

// A mapped op reads its first operands (two for the binary ones, the shape or repeats of the
// layout ones) and writes one result; a node of a corrupted model may list fewer (ONNX writes
// an absent optional input as an empty name).
std::optional<std::string> arityProblem(const Node& node) {
  static const std::set<std::string> kTwoOperands = {"MatMul", "Gemm", "Add",     "Sub",    "Mul",
                                                     "Div",    "Pow",  "Reshape", "Expand", "Tile"};
  const size_t needed = kTwoOperands.count(node.op) ? 2 : 1;
  for (size_t i = 0; i < needed; ++i) {
    if (i >= node.inputs.size() || node.inputs[i].empty()) {
      return "operand " + std::to_string(i) + " is missing";
    }
  }
  if (node.outputs.size() != 1 || node.outputs[0].empty()) return "it does not have one result";
  return std::nullopt;
}

// The dims of size > 1 in the order a transpose reads them: when they keep their order, the
// transpose moves no data.
bool keepsOrderOfRealDims(const Dims& in, const std::vector<int64_t>& perm) {
  int64_t last = -1;
  for (int64_t p : perm) {
    if (in[p] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

// [.., a, b, c] -> [.., b, a, c]: the head transpose of attention ([b, s, h, d] -> [b, h, s, d]).
bool swapsHeads(const std::vector<int64_t>& perm) {
  const size_t r = perm.size();
  if (r < 3) return false;
  for (size_t d = 0; d + 3 < r; ++d) {
    if (perm[d] != static_cast<int64_t>(d)) return false;
  }
  return perm[r - 3] == static_cast<int64_t>(r - 2) && perm[r - 2] == static_cast<int64_t>(r - 3) &&
         perm[r - 1] == static_cast<int64_t>(r - 1);
}

bool swapsLastTwo(const std::vector<int64_t>& perm) {
  const size_t r = perm.size();
  if (r < 2) return false;
  for (size_t d = 0; d + 2 < r; ++d) {
    if (perm[d] != static_cast<int64_t>(d)) return false;
  }
  return perm[r - 2] == static_cast<int64_t>(r - 1) && perm[r - 1] == static_cast<int64_t>(r - 2);
}

std::optional<double> scalarConstant(const Model& model, const std::string& value) {
  const auto found = model.constants.find(value);
  if (found == model.constants.end() || found->second.values.size() != 1) return std::nullopt;
  return found->second.values[0];
}

// The checks every mapped node shares: known static shapes, float tensors.
std::optional<std::string> shapeProblem(const Model& model, const Node& node, size_t tensorInputs) {
  for (size_t i = 0; i < node.inputs.size() && i < tensorInputs; ++i) {
    if (node.inputs[i].empty()) continue;
    const Value& v = model.values.at(node.inputs[i]);
    if (!v.shape) return "input '" + v.name + "': " + v.whyNoShape;
    if (!v.dtype && !model.constants.count(v.name)) {
      return "input '" + v.name + "' is " + v.elemType + " (f16, bf16 and f32 map)";
    }
  }
  for (const std::string& out : node.outputs) {
    const Value& v = model.values.at(out);
    if (!v.shape) return "output '" + v.name + "': " + v.whyNoShape;
  }
  return std::nullopt;
}

NodeSupport classifyCompute(const Model& model, const Node& node) {
  const size_t tensorInputs = node.op == "Gemm" ? 3 : node.op.rfind("Reduce", 0) == 0 ? 1 : 2;
  if (std::optional<std::string> problem = shapeProblem(model, node, tensorInputs)) {
    return unsupported(*problem);
  }
  if (node.op == "MatMul") {
    for (const std::string& in : node.inputs) {
      if (model.values.at(in).shape->size() < 2) {
        return unsupported("a 1-D operand ('" + in + "'): the IR's matmul takes matrices");
      }
    }
  }
  if (node.op == "Pow") {
    const std::optional<double> e = scalarConstant(model, node.inputs.at(1));
    if (!e) return unsupported("the exponent is not a constant scalar");
    if (*e != 2.0 && *e != 1.0 && *e != 0.5 && *e != 3.0) {
      return unsupported("exponent " + std::to_string(*e) + " (3, 2, 1 and 0.5 map)");
    }
  }
  if (node.op.rfind("Reduce", 0) == 0 && !axesOf(model, node)) {
    return unsupported("its axes are computed at run time");
  }
  if (!model.values.at(node.outputs.at(0)).dtype) {
    return unsupported("its result is " + model.values.at(node.outputs[0]).elemType);
  }
  return {NodeRole::Compute, "", false};
}

NodeSupport classifyCast(const Model& model, const Node& node) {
  const Value& in = model.values.at(node.inputs.at(0));
  const Value& out = model.values.at(node.outputs.at(0));
  if (!in.dtype || !out.dtype) {
    return unsupported("casts " + in.elemType + " to " + out.elemType +
                       " (casts between f16, bf16 and f32 map)");
  }
  if (!in.shape) return unsupported("input '" + in.name + "': " + in.whyNoShape);
  return {NodeRole::Alias, "", false};
}

// Each dim of a value's shape with the dynamic dim it is ("" where static): a dynamic dim's
// extent is its reference, which a static dim may equal.
std::vector<std::pair<int64_t, std::string>> namedDims(const Value& v) {
  const Dims& shape = v.shape.value();
  std::vector<std::pair<int64_t, std::string>> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    dims.emplace_back(shape[d], v.dynamicDims.empty() ? "" : v.dynamicDims[d]);
  }
  return dims;
}

// Reshape-like nodes and Transpose: an alias, a view, or data movement.
NodeSupport classifyLayout(const Model& model, const Node& node,
                           const std::map<std::string, Layout>& viewLayouts) {
  const Value& in = model.values.at(node.inputs.at(0));
  const Value& out = model.values.at(node.outputs.at(0));
  if (!in.shape) return unsupported("input '" + in.name + "': " + in.whyNoShape);
  if (!out.shape) return unsupported("output '" + out.name + "': " + out.whyNoShape);
  const auto found = viewLayouts.find(in.name);
  const Layout inputLayout = found == viewLayouts.end() ? in.storedLayout : found->second;
  bool swap = false, heads = false;
  if (node.op == "Transpose") {
    std::vector<int64_t> perm = node.intsAttr("perm").value_or(std::vector<int64_t>{});
    if (perm.empty()) {
      for (size_t d = in.shape->size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
    }
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t d = 0; d < sorted.size() || d < in.shape->size(); ++d) {
      if (d >= sorted.size() || d >= in.shape->size() || sorted[d] != static_cast<int64_t>(d)) {
        return unsupported("perm " + graph::formatDims(perm) + " is not a permutation of the " +
                           std::to_string(in.shape->size()) + " dims of its input");
      }
    }
    if (!keepsOrderOfRealDims(*in.shape, perm)) {
      heads = swapsHeads(perm) && stripDims(*out.shape).size() >= 3;
      if (!swapsLastTwo(perm) && !heads) {
        return unsupported("moves data (perm " + graph::formatDims(perm) +
                           "); a swap of the last two dims or of the two before them (the heads) "
                           "is a layout view");
      }
      swap = !heads;
      const Layout own = heads ? Layout::HeadsTransposed : Layout::Transposed;
      if (inputLayout != Layout::RowMajor && inputLayout != own) {
        return unsupported("transposes a " + std::string(graph::layoutName(inputLayout)) +
                           " view of '" + in.name + "' again, which no layout describes");
      }
    }
  } else if (node.op == "Expand" || node.op == "Tile") {
    if (!sameUpToLeadingOnes(in, out)) {
      return unsupported("repeats data (" + graph::formatDims(*in.shape) + " to " +
                         graph::formatDims(*out.shape) + "); the IR has no broadcasting copy");
    }
  }
  if (!swap && !heads && sameUpToLeadingOnes(in, out)) {
    return {NodeRole::Alias, "", false};
  }
  if (node.op == "Expand" || node.op == "Tile") return {NodeRole::Alias, "", false};
  // Leading dims merged (row_merge.h): [b, s, h] and [b·s, h] are one IR tensor, whatever
  // layout it is read in.
  if (!swap && !heads && sameIrShape(in, out)) return {NodeRole::Alias, "", false};
  if (inputLayout != Layout::RowMajor && !swap && !heads) {
    // A reshape of the dims before those the layout swaps keeps the view (the exporter's
    // [b, h, d, t] viewed [b·h, d, t] for bmm and back); any other moves data.
    const size_t swapped = static_cast<size_t>(graph::swappedDimsFromEnd(inputLayout).first);
    const auto from = namedDims(in), to = namedDims(out);
    if (from.size() < swapped || to.size() < swapped ||
        !std::equal(from.end() - static_cast<std::ptrdiff_t>(swapped), from.end(),
                    to.end() - static_cast<std::ptrdiff_t>(swapped))) {
      return unsupported("reshapes a " + std::string(graph::layoutName(inputLayout)) +
                         " view of '" + in.name + "', which moves data");
    }
  }
  NodeSupport view{NodeRole::View, "", swap};
  view.swapsHeads = heads;
  return view;
}

// Where(IsNaN(p), 0, p) with p a Softmax's result and the IsNaN read by nothing else: the
// indices of the IsNaN and the Where nodes.
std::map<int, int> softmaxNanGuards(const Model& model) {
  std::map<int, int> guards;  // IsNaN node -> Where node
  for (size_t w = 0; w < model.nodes.size(); ++w) {
    const Node& where = model.nodes[w];
    if (where.op != "Where" || where.inputs.size() != 3 || where.outputs.size() != 1 ||
        !where.domain.empty()) {
      continue;
    }
    const int isNan = model.producerOf(where.inputs[0]);
    if (isNan < 0 || model.nodes[isNan].op != "IsNaN") continue;
    const std::string& p = where.inputs[2];
    if (model.nodes[isNan].inputs.empty() || model.nodes[isNan].inputs[0] != p) continue;
    const int softmax = model.producerOf(p);
    if (softmax < 0 || model.nodes[softmax].op != "Softmax") continue;
    const auto zero = model.constants.find(where.inputs[1]);
    if (zero == model.constants.end() ||
        std::any_of(zero->second.values.begin(), zero->second.values.end(),
                    [](double v) { return v != 0.0; })) {
      continue;
    }
    int readers = 0;
    for (const Node& n : model.nodes) {
      readers += static_cast<int>(std::count(n.inputs.begin(), n.inputs.end(), where.inputs[0]));
    }
    const bool returned =
        std::count(model.graphOutputs.begin(), model.graphOutputs.end(), where.inputs[0]) > 0;
    if (readers != 1 || returned) continue;
    guards[isNan] = static_cast<int>(w);
  }
  return guards;
}

}  // namespace

Layout viewLayout(Layout before, const NodeSupport& view) {
  const Layout own = view.transposes   ? Layout::Transposed
                     : view.swapsHeads ? Layout::HeadsTransposed
                                       : Layout::RowMajor;
  if (own == Layout::RowMajor) return before;
  if (before == own) return Layout::RowMajor;  // a swap undone
  if (before == Layout::RowMajor) return own;  // the first one
  // One swap on the other: classification refuses such views (classifyLayout); a caller
  // composing a chain it did not classify (views of a stored buffer) says so.
  throw std::invalid_argument("a " + std::string(graph::layoutName(own)) + " view of a " +
                              std::string(graph::layoutName(before)) +
                              " value, which no layout describes");
}

bool undoesStoredLayout(const Model& model, const std::vector<NodeSupport>& support,
                        const std::string& value) {
  std::vector<int> views;
  std::string buffer = value;
  for (int producer = model.producerOf(buffer);
       producer >= 0 && support[producer].role == NodeRole::View;
       producer = model.producerOf(buffer)) {
    views.push_back(producer);
    buffer = model.nodes[producer].inputs.at(0);
  }
  Layout layout = model.values.at(buffer).storedLayout;
  if (views.empty() || layout == Layout::RowMajor) return false;
  try {
    for (auto v = views.rbegin(); v != views.rend(); ++v) layout = viewLayout(layout, support[*v]);
  } catch (const std::invalid_argument&) {
    return false;
  }
  return layout == Layout::RowMajor;
}

Dims stripDims(const Dims& shape) {
  if (shape.empty()) return {1};
  const size_t keep = std::min<size_t>(2, shape.size());
  size_t first = 0;
  while (first + keep < shape.size() && shape[first] == 1) ++first;
  return Dims(shape.begin() + first, shape.end());
}

Dims irShape(const Value& value) {
  Dims shape = value.shape.value();
  if (value.tiling.times != 1) shape[shape.size() - value.tiling.dimFromEnd] *= value.tiling.times;
  const size_t kept = static_cast<size_t>(value.keptDims);
  if (kept == 0 || shape.size() <= kept) return stripDims(shape);
  int64_t merged = 1;
  for (size_t d = 0; d + kept < shape.size(); ++d) merged *= shape[d];
  Dims ir{merged};
  ir.insert(ir.end(), shape.end() - static_cast<std::ptrdiff_t>(kept), shape.end());
  return ir;
}

bool sameUpToLeadingOnes(const Value& a, const Value& b) {
  auto strip = [](const Value& v) {
    std::vector<std::pair<int64_t, std::string>> dims = namedDims(v);
    if (dims.empty()) dims.emplace_back(1, "");
    size_t first = 0;
    while (first + 1 < dims.size() && dims[first] == std::pair<int64_t, std::string>{1, ""}) {
      ++first;
    }
    dims.erase(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(first));
    return dims;
  };
  return strip(a) == strip(b);
}

bool sameIrShape(const Value& a, const Value& b) {
  const Dims ir = irShape(a);
  if (ir != irShape(b)) return false;
  // A merged or tiled value has static dims (row_merge.h); the rest are stripDims' last dims.
  auto names = [&](const Value& v) {
    return v.dynamicDims.empty() ? std::vector<std::string>(ir.size())
                                 : std::vector<std::string>(v.dynamicDims.end() -
                                                                static_cast<std::ptrdiff_t>(
                                                                    ir.size()),
                                                            v.dynamicDims.end());
  };
  return names(a) == names(b);
}

bool sameUpToLeadingOnes(const Dims& a, const Dims& b) {
  auto strip = [](const Dims& shape) {
    size_t first = 0;
    while (first + 1 < shape.size() && shape[first] == 1) ++first;
    return Dims(shape.begin() + first, shape.end());
  };
  return strip(a.empty() ? Dims{1} : a) == strip(b.empty() ? Dims{1} : b);
}

std::vector<NodeSupport> classifyNodes(const Model& model) {
  std::vector<NodeSupport> support;
  std::map<std::string, Layout> viewLayouts;  // value -> how a view reads its buffer
  const std::map<int, int> guards = softmaxNanGuards(model);
  const std::map<int, RotationPattern> rotations = findRotations(model);
  std::set<int> rotationParts;
  for (const auto& [head, rotation] : rotations) {
    rotationParts.insert(rotation.parts.begin(), rotation.parts.end());
  }
  const CausalMasks masks = findCausalMasks(model);
  std::set<int> guardedWheres;
  for (const auto& [isNan, where] : guards) guardedWheres.insert(where);
  for (size_t index = 0; index < model.nodes.size(); ++index) {
    const Node& node = model.nodes[index];
    NodeSupport s;
    if (guards.count(static_cast<int>(index))) {
      s = {NodeRole::Guard, "", false};
    } else if (guardedWheres.count(static_cast<int>(index))) {
      s = {NodeRole::Alias, "", false, 2};
    } else if (rotations.count(static_cast<int>(index))) {
      s = {NodeRole::Compute, "", false};
    } else if (rotationParts.count(static_cast<int>(index))) {
      s = {NodeRole::Part, "", false};
    } else if (masks.sources.count(static_cast<int>(index))) {
      // Its reason stands where no subgraph holds it (a mask several attentions share).
      s = {NodeRole::Part, kMaskSourceReason, false};
    } else if (!node.domain.empty()) {
      s = unsupported("op of domain '" + node.domain + "'");
    } else if (node.op == "Constant" ||
               (!node.outputs.empty() && model.folded.count(node.outputs[0]))) {
      s = {NodeRole::Constant, "", false};
    } else if (const std::optional<std::string> problem =
                   isMappedOp(node.op) ? arityProblem(node) : std::nullopt) {
      s = unsupported(*problem);
    } else if (kComputeOps.count(node.op)) {
      s = classifyCompute(model, node);
      const auto causal = masks.adds.find(static_cast<int>(index));
      if (s.role == NodeRole::Compute && causal != masks.adds.end()) s.causal = causal->second;
    } else if (node.op == "Cast") {
      s = classifyCast(model, node);
    } else if (node.op == "Identity") {
      s = {NodeRole::Alias, "", false};
    } else if (kReshapeOps.count(node.op) || node.op == "Transpose" || node.op == "Expand" ||
               node.op == "Tile") {
      s = classifyLayout(model, node, viewLayouts);
    } else {
      s = unsupported("no mapping for ONNX op '" + node.op + "'");
    }
    if (s.role == NodeRole::View && !node.outputs.empty()) {
      // A view's layout composes from its input's: a view's, or the buffer's as stored.
      const auto before = viewLayouts.find(node.inputs.at(0));
      viewLayouts[node.outputs[0]] =
          viewLayout(before == viewLayouts.end() ? model.values.at(node.inputs[0]).storedLayout
                                                 : before->second,
                     s);
    }
    support.push_back(std::move(s));
  }
  return support;
}

}  // namespace mugraph::onnx_import
