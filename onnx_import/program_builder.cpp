#include "onnx_import/program_builder.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "graph/builder.h"
#include "graph/dynamic_dims.h"
#include "graph/shape_inference.h"
#include "onnx_import/model_shapes.h"
#include "onnx_import/program_builder_impl.h"

namespace mugraph::onnx_import {
namespace detail {

std::optional<double> ProgramBuilder::scalarOf(const std::string& value) const {
  if (inside_.count(value)) {
    const auto found = values_.find(value);
    return found == values_.end() ? std::nullopt : found->second.scalar;
  }
  const auto c = model_.constants.find(value);
  if (c == model_.constants.end() || c->second.values.size() != 1) return std::nullopt;
  return c->second.values[0];
}

// The rank the value has in the IR: a computed value's own, else its stripped ONNX rank.
int ProgramBuilder::rankOf(const std::string& value) const {
  const auto found = values_.find(value);
  if (found != values_.end() && found->second.tensor >= 0) {
    return static_cast<int>(builder_.desc(found->second.tensor).shape.size());
  }
  return static_cast<int>(irShape(model_.values.at(value)).size());
}

int ProgramBuilder::resultRank(int rank, const std::string& out) const {
  const auto wanted = broadcastRanks_.find(out);
  return wanted == broadcastRanks_.end() ? rank : std::max(rank, wanted->second);
}

// The IR aligns ranks by leading size-1 dims only for inputs, so a value computed at a lower
// rank than an op that broadcasts it (Gemma's 1 + weight, [d], scaling a norm's [s, d]) would
// cut the subgraph there. An element-wise chain from inputs is built at the higher rank
// instead, its inputs declared with leading 1s: the same values. Walked from the last node,
// each binary op asks its operands for its own rank, and each element-wise op (an alias
// among them) passes what is asked of it on to its operand; reductions and matmuls pass
// nothing on.
void ProgramBuilder::planBroadcastRanks(const std::vector<int>& nodes) {
  static const std::set<std::string> kUnary = {"Exp",  "Sqrt", "Sigmoid", "Tanh",      "Erf",
                                               "Relu", "Neg",  "Pow",     "Reciprocal"};
  const auto natural = [&](const std::string& v) {
    const Value& value = model_.values.at(v);
    return value.shape ? static_cast<int>(irShape(value).size()) : 0;
  };
  const auto ask = [&](const std::string& v, int rank) {
    if (!inside_.count(v) || natural(v) >= rank) return;
    int& wanted = broadcastRanks_[v];
    wanted = std::max(wanted, rank);
  };
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node& n = model_.nodes[*it];
    if (n.outputs.empty() || n.inputs.empty()) continue;
    const auto found = broadcastRanks_.find(n.outputs[0]);
    const int wanted = found == broadcastRanks_.end() ? 0 : found->second;
    if (n.op == "Add" || n.op == "Sub" || n.op == "Mul" || n.op == "Div") {
      int rank = wanted;
      for (const std::string& in : n.inputs) {
        if (!scalarOf(in)) rank = std::max(rank, natural(in));
      }
      for (const std::string& in : n.inputs) ask(in, rank);
    } else if (wanted > 0 && support_[*it].role == NodeRole::Alias) {
      ask(n.inputs.at(support_[*it].aliasInput), wanted);
    } else if (wanted > 0 && kUnary.count(n.op)) {
      ask(n.inputs[0], wanted);
    }
  }
}

std::string ProgramBuilder::fresh(const std::string& base) {
  std::string name = sanitizeName(base);
  for (int k = 1; names_.count(name); ++k) name = sanitizeName(base) + "_" + std::to_string(k);
  names_.insert(name);
  return name;
}

TensorId ProgramBuilder::op(OpKind kind, std::vector<TensorId> in, graph::OpAttrs attrs,
                            const std::string& base) {
  try {
    return builder_.op(kind, std::move(in), attrs,
                       fresh(base.empty() ? node().outputs.at(0) : base));
  } catch (const graph::ShapeError& e) {
    fail(e.what());
  }
}

void ProgramBuilder::define(const std::string& value, TensorId id) {
  const Dims& ir = builder_.desc(id).shape;
  if (!sameUpToLeadingOnes(ir, irShape(model_.values.at(value)))) {
    fail("its result " + graph::formatDims(onnxShape(value)) + " is " + graph::formatDims(ir) +
         " in the IR (the IR keeps reduced dims and aligns ranks only by leading size-1 dims)");
  }
  values_[value] = tensorValue(id);
}

// An input of the program for a value computed outside: through the views it comes by, down
// to the buffer that holds it.
TensorId ProgramBuilder::external(const std::string& value, int rank, bool transposeHere,
                                  std::optional<graph::DType> readAs) {
  const Value& v = model_.values.at(value);
  if (!v.dtype) fail("input '" + value + "' is " + v.elemType);
  const graph::DType declared = readAs.value_or(*v.dtype);
  const bool converted = declared != *v.dtype;
  // One input per rank a value is read at: RoPE's cos read by q of several heads (rank 3) and
  // by the one KV head of multi-query attention (rank 2, its head dim a leading 1) is two
  // inputs the binding hands the same memory; and one per dtype it is read at.
  const std::string key = value + (transposeHere ? "^T" : "") + "@" + std::to_string(rank) +
                          (converted ? ":" + std::string(graph::dtypeName(declared)) : "");
  if (const auto found = externals_.find(key); found != externals_.end()) {
    return found->second.first;
  }
  std::string buffer = value;
  std::vector<int> views;  // from the value down to its buffer (aliases included)
  for (;;) {
    const int producer = model_.producerOf(buffer);
    if (producer < 0 || model_.nodes[producer].inputs.empty()) break;
    const std::string& below = model_.nodes[producer].inputs[0];
    const NodeRole role = support_[producer].role;
    // An alias (PyTorch's clone) of views that undo their buffer's stored layout copies
    // memory already in the order it makes: the views' buffer is read instead.
    if (role != NodeRole::View &&
        !(role == NodeRole::Alias && undoesStoredLayout(model_, support_, below))) {
      break;
    }
    views.push_back(producer);
    buffer = below;
  }
  // A buffer the framework stores with gaps (a column slice of a fused projection) is copied
  // dense for the program whatever it reads of it, so the value itself is read: the copy is
  // then made in the order the program reads it. Through the views, it would copy the buffer
  // as it lies and leave the order to the views' layout, so a framework kernel that writes
  // this copy beside others (RoPE's q and k, row-major) would write in two orders at once.
  if (!views.empty() && !model_.values.at(buffer).dense) {
    buffer = value;
    views.clear();
  }
  // The buffer as the framework stores it, then each view on the way to the value.
  graph::Layout layout = model_.values.at(buffer).storedLayout;
  try {
    for (auto v = views.rbegin(); v != views.rend(); ++v) layout = viewLayout(layout, support_[*v]);
  } catch (const std::invalid_argument& e) {
    fail("reads '" + value + "' through " + e.what());
  }
  if (readSwapped_.count(value)) {
    if (layout == graph::Layout::Transposed) {
      fail("reads '" + value +
           "' with its heads swapped, a transposed view: no layout describes it");
    }
    NodeSupport swap;
    swap.swapsHeads = true;
    layout = viewLayout(layout, swap);
  }
  if (transposeHere) {
    if (layout == graph::Layout::HeadsTransposed) {
      fail("reads '" + value + "' transposed, a heads_transposed view: no layout describes it");
    }
    NodeSupport swap;
    swap.transposes = true;
    layout = viewLayout(layout, swap);
  }
  Dims shape = irShape(v);
  if (transposeHere) std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  while (static_cast<int>(shape.size()) < rank) shape.insert(shape.begin(), 1);
  const std::string irName = fresh(value + (transposeHere ? "_T" : ""));
  if (static_cast<int>(shape.size()) < graph::swappedDimsFromEnd(layout).first) {
    fail("reads '" + value + "' as " + std::string(graph::layoutName(layout)) + " at rank " +
         std::to_string(shape.size()));
  }
  const TensorId id = builder_.input(irName, declared, shape, layout,
                                     dynamicRecord(value, shape.size(), transposeHere));
  externals_[key] = {id, rank};
  const auto tiling = tiled_.find(value);
  inputs_.push_back({irName, value, buffer, layout == graph::Layout::Transposed, layout,
                     tiling == tiled_.end() ? v.tiling : tiling->second,
                     model_.values.at(buffer).storedLayout, converted ? v.dtype : std::nullopt});
  return id;
}

// The dynamic dims (graph/dynamic_dims.h) of an input read from `value` as an IR tensor of
// rank `rank`, in the IR's dim order; each dim the model leaves dynamic is declared in the
// program at its first use. Empty where every dim is static. A value computed outside whose
// dims the file does not name may still follow a dynamic input through the ops before it;
// one whose shape holds a dynamic dim's reference extent is refused rather than read as a
// static dim of that size.
std::vector<int> ProgramBuilder::dynamicRecord(const std::string& value, size_t rank,
                                               bool transposed) {
  const Value& v = model_.values.at(value);
  if (v.dynamicDims.empty()) {
    if (v.initializer || v.graphInput) return {};  // the file gives their dims
    for (const graph::DynamicDim& d : model_.dims) {
      const Dims& shape = onnxShape(value);
      if (std::find(shape.begin(), shape.end(), d.max) != shape.end()) {
        fail("reads '" + value + "', whose shape " + graph::formatDims(shape) +
             " may carry the dynamic dim '" + d.name +
             "' through ops the importer does not follow dims through (pin it with --dim " +
             d.name + "=N)");
      }
    }
    return {};
  }
  const Dims stripped = stripDims(onnxShape(value));
  std::vector<int> record;
  for (size_t d = v.dynamicDims.size() - stripped.size(); d < v.dynamicDims.size(); ++d) {
    const std::string& name = v.dynamicDims[d];
    if (name.empty()) {
      record.push_back(graph::kStaticDim);
      continue;
    }
    std::optional<int> dim = graph::findDim(builder_.graph(), name);
    if (!dim) {
      for (const graph::DynamicDim& declared : model_.dims) {
        if (declared.name == name) builder_.dim(declared);
      }
      dim = graph::findDim(builder_.graph(), name);
    }
    record.push_back(*dim);
  }
  if (transposed) std::swap(record[record.size() - 1], record[record.size() - 2]);
  while (record.size() < rank) record.insert(record.begin(), graph::kStaticDim);
  return record;
}

// The IR tensor of a value at `rank` (inputs are declared at the rank their first use needs).
TensorId ProgramBuilder::tensor(const std::string& value, int rank,
                                std::optional<graph::DType> readAs) {
  if (!inside_.count(value)) {
    if (model_.constants.count(value) && model_.constants.at(value).values.size() == 1) {
      fail("reads the constant '" + value + "' where the IR takes a tensor");
    }
    return external(value, rank, false, readAs);
  }
  const IrValue& v = values_.at(value);
  if (v.readsOutside) {
    const std::string bound = boundValue(value);
    for (int p = model_.producerOf(bound); p >= 0 && inside_.count(model_.nodes[p].outputs.at(0));
         p = model_.producerOf(model_.nodes[p].inputs.at(support_[p].aliasInput))) {
      framework_.insert(p);
    }
    return external(bound, rank, false, readAs);
  }
  if (v.tensor < 0) {
    if (v.denominator >= 0) {
      throw BuildFailure(v.reciprocalNode, "its reciprocal is read by " + node().op + " '" +
                                               node().name + "'; the IR divides only");
    }
    fail("reads the constant '" + value + "' where the IR takes a tensor");
  }
  if (rankOf(value) != rank) {
    fail("broadcasts '" + value + "' (rank " + std::to_string(rankOf(value)) +
         " in the IR) to rank " + std::to_string(rank) + ": only inputs take leading size-1 dims");
  }
  return v.tensor;
}

std::optional<graph::DType> ProgramBuilder::programDtype(const std::string& value) const {
  if (!inside_.count(value)) return model_.values.at(value).dtype;
  const IrValue& v = values_.at(value);
  if (v.readsOutside) return model_.values.at(boundValue(value)).dtype;
  if (v.tensor < 0) return std::nullopt;
  return builder_.desc(v.tensor).dtype;
}

// The value an alias chain from outside (casts, Identity, reshapes of leading 1s) is read
// from: the narrowest float along it, the one nearest its source among equals. A cast to a
// wider type is exact, so the narrowest value holds all the chain passes on: the program reads
// what the framework's own consumers read (RoPE's f32 cos/sin, cast to f16), in the dtype the
// rest of the subgraph computes in (an RMSNorm's f32 upcast of an f16 input reads the input).
std::string ProgramBuilder::boundValue(const std::string& value) const {
  std::string best = value, current = value;
  for (;;) {
    const int p = model_.producerOf(current);
    if (p < 0 || !inside_.count(current) || support_[p].role != NodeRole::Alias) break;
    current = model_.nodes[p].inputs.at(support_[p].aliasInput);
    const std::optional<graph::DType>& up = model_.values.at(current).dtype;
    const std::optional<graph::DType>& now = model_.values.at(best).dtype;
    if (!up || !now) break;
    if (graph::dtypeBytes(*up) < graph::dtypeBytes(*now) || *up == *now) best = current;
  }
  return best;
}

int ProgramBuilder::irDim(const std::string& value, int64_t axis) const {
  const size_t onnxRank = onnxShape(value).size();
  const std::optional<int> a = normalizeAxis(axis, onnxRank);
  if (!a) fail("axis " + std::to_string(axis) + " is out of range");
  return *a - static_cast<int>(onnxRank) + rankOf(value);
}

// The Cast nearest upstream of `value`, inside the set, that converts to `dtype`: the node to
// leave out when a result would leave the subgraph in another dtype than it computes in.
int ProgramBuilder::castProducing(const std::string& value, graph::DType dtype) const {
  std::vector<std::string> pending{value};
  std::set<std::string> seen;
  while (!pending.empty()) {
    const std::string v = pending.front();
    pending.erase(pending.begin());
    if (!inside_.count(v) || !seen.insert(v).second) continue;
    const int n = model_.producerOf(v);
    if (n < 0) continue;
    const Node& candidate = model_.nodes[n];
    if (candidate.op == "Cast" && model_.values.at(v).dtype == dtype) return n;
    pending.insert(pending.end(), candidate.inputs.begin(), candidate.inputs.end());
  }
  return -1;
}

void ProgramBuilder::output(const std::string& value) {
  if (!values_.count(value)) {  // a part of a pattern whose head was left out
    node_ = model_.producerOf(value);
    fail("its result '" + value + "' is read outside the pattern it belongs to");
  }
  const IrValue& v = values_.at(value);
  if (v.denominator >= 0) {
    throw BuildFailure(v.reciprocalNode, "its reciprocal leaves the subgraph; the IR divides only");
  }
  node_ = model_.producerOf(value);
  if (v.readsOutside) fail("its result is an input unchanged");
  if (v.tensor < 0) fail("its result '" + value + "' is a constant");
  const graph::TensorDesc& desc = builder_.desc(v.tensor);
  const Value& onnxValue = model_.values.at(value);
  for (const BoundInput& in : inputs_) {
    if (builder_.graph().findTensor(in.irName) == v.tensor)
      fail("its result is an input unchanged");
  }
  for (const BoundOutput& o : outputs_) {
    if (builder_.graph().findTensor(o.irName) == v.tensor) {
      fail("its result '" + value + "' is the same tensor as '" + o.value + "'");
    }
  }
  if (onnxValue.dtype && *onnxValue.dtype != desc.dtype) {
    if (const int cast = castProducing(value, *onnxValue.dtype); cast >= 0) {
      throw BuildFailure(cast, "converts to " + std::string(graph::dtypeName(*onnxValue.dtype)) +
                                   " for '" + value + "', which leaves the subgraph computed in " +
                                   std::string(graph::dtypeName(desc.dtype)) +
                                   " (the IR stores a result in its operands' dtype)");
    }
    fail("its result leaves the subgraph as " + std::string(graph::dtypeName(*onnxValue.dtype)) +
         " while the subgraph computes it in " + std::string(graph::dtypeName(desc.dtype)) +
         " (the IR stores a result in its operands' dtype)");
  }
  // Stored as the framework stores the value (Value::storedLayout), so no copy follows; only
  // where the program's tensor is that value's shape (a folded one is not).
  const graph::Layout layout =
      onnxValue.shape && sameUpToLeadingOnes(desc.shape, irShape(onnxValue))
          ? onnxValue.storedLayout
          : graph::Layout::RowMajor;
  builder_.output(v.tensor, layout);
  outputs_.push_back({desc.name, value, layout});
}

}  // namespace detail

std::string sanitizeName(const std::string& onnxName) {
  std::string name;
  for (char c : onnxName) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok)
      name += c;
    else if (!name.empty() && name.back() != '_')
      name += '_';
  }
  while (!name.empty() && name.back() == '_') name.pop_back();
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) name = "v" + name;
  return name;
}

BuiltProgram buildProgram(const Model& model, const std::vector<NodeSupport>& support,
                          const std::vector<int>& nodes, const std::vector<std::string>& outputs,
                          const std::string& name, const std::set<std::string>& readSwapped,
                          const std::map<std::string, Tiling>& tiled) {
  detail::ProgramBuilder builder(model, support, nodes, name, readSwapped, tiled);
  for (int n : nodes) builder.map(n);
  for (const std::string& value : outputs) builder.output(value);
  try {
    return builder.finish();
  } catch (const graph::ShapeError& e) {
    throw BuildFailure(nodes.back(), e.what());
  } catch (const graph::IrError& e) {
    throw BuildFailure(nodes.back(), e.what());
  }
}

}  // namespace mugraph::onnx_import
