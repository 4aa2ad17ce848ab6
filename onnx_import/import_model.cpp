#include "onnx_import/import_model.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <variant>

#include "onnx_import/causal_masks.h"
#include "onnx_import/function_ops.h"
#include "onnx_import/heads_pushdown.h"
#include "onnx_import/model_shapes.h"
#include "onnx_import/node_support.h"
#include "onnx_import/repeated_heads.h"
#include "onnx_import/row_merge.h"

namespace mugraph::onnx_import {
namespace {

struct Graph {
  std::map<std::string, std::vector<int>> consumers;  // value -> nodes
};

Graph edges(const Model& model) {
  Graph g;
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    for (const std::string& in : model.nodes[n].inputs) {
      if (!in.empty()) g.consumers[in].push_back(static_cast<int>(n));
    }
  }
  return g;
}

// Aliases of values from outside (casts, copies, reshapes of leading size-1 dims of a value
// no mapped node computes: RoPE's cos/sin tables, an RMSNorm's upcast of its input). They
// compute nothing: they are no result of their set (a reader elsewhere reads the value as it
// is), and a path from them through the framework is no path out of their set.
std::set<int> looseAliases(const Model& model, const std::vector<NodeSupport>& support) {
  std::set<int> loose;
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    if (support[n].role != NodeRole::Alias) continue;
    const int p = model.producerOf(model.nodes[n].inputs.at(support[n].aliasInput));
    const bool computed = p >= 0 && (mapped(support[p]) || joinsAsHeadTranspose(model, support, p));
    if (!computed || loose.count(p)) loose.insert(static_cast<int>(n));
  }
  return loose;
}

// Connected sets among `nodes` (mapped nodes), joined where one reads the other's result
// directly; each sorted, the sets in the order of their first node.
std::vector<std::vector<int>> connectedSets(const Model& model, const std::vector<int>& nodes) {
  const std::set<int> among(nodes.begin(), nodes.end());
  std::map<int, int> parent;
  for (int n : nodes) parent[n] = n;
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (int n : nodes) {
    for (const std::string& in : model.nodes[n].inputs) {
      const int p = model.producerOf(in);
      if (p >= 0 && among.count(p)) parent[find(n)] = find(p);
    }
  }
  std::map<int, std::vector<int>> byRoot;
  for (int n : nodes) byRoot[find(n)].push_back(n);
  std::vector<std::vector<int>> sets;
  for (auto& [root, members] : byRoot) {
    std::sort(members.begin(), members.end());
    sets.push_back(members);
  }
  std::sort(sets.begin(), sets.end());
  return sets;
}

// The nodes reading any result of `from` (forward edges), and theirs, transitively.
std::set<int> descendants(const Model& model, const Graph& g, const std::set<int>& from) {
  std::set<int> seen;
  std::vector<int> frontier(from.begin(), from.end());
  while (!frontier.empty()) {
    const int n = frontier.back();
    frontier.pop_back();
    for (const std::string& out : model.nodes[n].outputs) {
      const auto c = g.consumers.find(out);
      if (c == g.consumers.end()) continue;
      for (int reader : c->second) {
        if (seen.insert(reader).second) frontier.push_back(reader);
      }
    }
  }
  return seen;
}

// A connected set split until no path leaves a part and comes back into it: a subgraph runs as
// one launch, so everything it reads must be ready before it starts. The nodes downstream of
// a node outside the set that reads the set's results move to later parts (split again the
// same way); the rest is one convex part per connected piece.
std::vector<std::vector<int>> convexParts(const Model& model, const Graph& g,
                                          const std::vector<int>& set, const std::set<int>& loose) {
  const std::set<int> inside(set.begin(), set.end());
  std::set<int> computed;  // a loose alias's readers elsewhere read no result of the set
  for (int n : set) {
    if (!loose.count(n)) computed.insert(n);
  }
  std::set<int> leaving;  // outside nodes reading a result of the set
  for (int n : descendants(model, g, computed)) {
    if (!inside.count(n)) leaving.insert(n);
  }
  const std::set<int> downstream = descendants(model, g, leaving);
  std::vector<int> early, late;
  for (int n : set) {
    if (!loose.count(n)) (downstream.count(n) ? late : early).push_back(n);
  }
  if (late.empty()) return {set};
  std::set<int> earlySide(early.begin(), early.end()), lateSide(late.begin(), late.end());
  // A node no result of the set reaches reads only values from outside (Gemma's 1 + weight,
  // from the weight alone): it goes with the side that reads it, so such a chain stays with
  // the op that reads it instead of becoming a launch of its own. No path from the set comes
  // back into it, so the later side stays convex. Readers first (node order is topological).
  const std::set<int> reached = descendants(model, g, computed);
  for (auto n = set.rbegin(); n != set.rend(); ++n) {
    if (loose.count(*n) || lateSide.count(*n) || reached.count(*n)) continue;
    bool readInside = false, onlyLate = true;
    for (const std::string& out : model.nodes[*n].outputs) {
      const auto readers = g.consumers.find(out);
      if (readers == g.consumers.end()) continue;
      for (int r : readers->second) {
        if (!inside.count(r)) continue;
        readInside = true;
        onlyLate = onlyLate && lateSide.count(r);
      }
    }
    if (readInside && onlyLate) {
      earlySide.erase(*n);
      lateSide.insert(*n);
    }
  }
  // A loose alias goes with each side that reads it (both, where both do).
  for (auto a = set.rbegin(); a != set.rend(); ++a) {
    if (!loose.count(*a)) continue;
    bool toEarly = false, toLate = false;
    const auto readers = g.consumers.find(model.nodes[*a].outputs.at(0));
    if (readers != g.consumers.end()) {
      for (int r : readers->second) {
        toEarly = toEarly || earlySide.count(r);
        toLate = toLate || lateSide.count(r);
      }
    }
    if (toEarly || !toLate) earlySide.insert(*a);
    if (toLate) lateSide.insert(*a);
  }
  early.assign(earlySide.begin(), earlySide.end());
  late.assign(lateSide.begin(), lateSide.end());
  std::vector<std::vector<int>> parts = connectedSets(model, early);
  for (const std::vector<int>& piece : connectedSets(model, late)) {
    for (std::vector<int>& part : convexParts(model, g, piece, loose)) {
      parts.push_back(std::move(part));
    }
  }
  std::sort(parts.begin(), parts.end());
  return parts;
}

// The set's one computing node, or -1 where it has none or several.
int loneCompute(const std::vector<NodeSupport>& support, const std::vector<int>& nodes) {
  int computing = -1;
  for (int n : nodes) {
    if (support[n].role != NodeRole::Compute) continue;
    if (computing >= 0) return -1;
    computing = n;
  }
  return computing;
}

// A set whose only computation is one op on a value converted from integers (RoPE's
// frequencies: the positions times the inverse frequencies in f32, an element-wise product or
// a batched outer product): it depends on positions alone, a launch of its own gains nothing
// over the framework's kernel, and the framework may fuse it with the cos and sin reading it.
bool lonePositionOp(const Model& model, const std::vector<NodeSupport>& support,
                    const std::vector<int>& nodes) {
  const int computing = loneCompute(support, nodes);
  if (computing < 0) return false;
  for (std::string in : model.nodes[computing].inputs) {
    int p = model.producerOf(in);
    while (p >= 0 && (support[p].role == NodeRole::Alias || support[p].role == NodeRole::View)) {
      p = model.producerOf(model.nodes[p].inputs.at(support[p].aliasInput));
    }
    if (p < 0 || model.nodes[p].op != "Cast" || model.nodes[p].inputs.empty()) continue;
    if (!model.values.at(model.nodes[p].inputs[0]).dtype) return true;  // from integers
  }
  return false;
}

// A set whose only computation is one element-wise op with a one-element operand (RoPE's cos
// times its scaling, which torch.compile's dynamic shapes make a 0-d tensor): a launch of its
// own only scales a value the framework computes, and the framework fuses it into that
// value's kernel.
bool loneScaling(const Model& model, const std::vector<NodeSupport>& support,
                 const std::vector<int>& nodes) {
  static const std::set<std::string> kScalings = {"Mul", "Div", "Add", "Sub"};
  const int computing = loneCompute(support, nodes);
  if (computing < 0 || !kScalings.count(model.nodes[computing].op)) return false;
  return std::any_of(model.nodes[computing].inputs.begin(), model.nodes[computing].inputs.end(),
                     [&](const std::string& in) {
                       const std::optional<graph::Dims>& shape = model.values.at(in).shape;
                       return shape && graph::elementCount(*shape) == 1;
                     });
}

// Convex connected sets of mapped nodes and of the head transposes of computed values that
// are not `pinned` (heads_pushdown.h): convexParts of each connected set.
std::vector<std::vector<int>> components(const Model& model, const Graph& g,
                                         const std::vector<NodeSupport>& support,
                                         const std::set<int>& pinned, const std::set<int>& loose) {
  std::vector<int> nodes;
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    const int i = static_cast<int>(n);
    if (mapped(support[n]) || (!pinned.count(i) && joinsAsHeadTranspose(model, support, i))) {
      nodes.push_back(i);
    }
  }
  std::vector<std::vector<int>> parts;
  for (const std::vector<int>& set : connectedSets(model, nodes)) {
    for (std::vector<int>& part : convexParts(model, g, set, loose)) {
      parts.push_back(std::move(part));
    }
  }
  std::sort(parts.begin(), parts.end());
  return parts;
}

// Values a set computes that something outside it reads, or that the graph returns.
std::vector<std::string> outputsOf(const Model& model, const Graph& g,
                                   const std::vector<int>& nodes, const std::set<int>& loose) {
  const std::set<int> inside(nodes.begin(), nodes.end());
  std::vector<std::string> outs;
  for (int n : nodes) {
    if (loose.count(n)) continue;  // not the set's result: its other readers read it as it is
    for (const std::string& value : model.nodes[n].outputs) {
      bool needed = std::count(model.graphOutputs.begin(), model.graphOutputs.end(), value) > 0;
      const auto c = g.consumers.find(value);
      if (c != g.consumers.end()) {
        for (int reader : c->second) needed = needed || !inside.count(reader);
      }
      if (needed) outs.push_back(value);
    }
  }
  return outs;
}

std::string subgraphName(const Model& model, const std::vector<int>& all,
                         const std::set<int>& loose, std::set<std::string>& used) {
  std::vector<int> nodes;  // named after what it computes, not the tables it reads
  for (int n : all) {
    if (!loose.count(n)) nodes.push_back(n);
  }
  if (nodes.empty()) nodes = all;
  std::string name = sanitizeName(sourceName(model.nodes[nodes.front()]));
  const std::string& last = sourceName(model.nodes[nodes.back()]);
  if (last != sourceName(model.nodes[nodes.front()])) name += "-" + sanitizeName(last);
  std::string unique = name;
  for (int k = 2; used.count(unique); ++k) unique = name + "-" + std::to_string(k);
  used.insert(unique);
  return unique;
}

// The nodes of a subgraph with the view and Constant nodes it reads through.
std::set<int> withReadNodes(const Model& model, const std::vector<NodeSupport>& support,
                            const std::vector<int>& nodes) {
  std::set<int> members(nodes.begin(), nodes.end());
  std::vector<std::string> pending;
  for (int n : nodes) {
    for (const std::string& in : model.nodes[n].inputs) pending.push_back(in);
  }
  while (!pending.empty()) {
    const std::string value = pending.back();
    pending.pop_back();
    const int p = model.producerOf(value);
    if (p < 0 || members.count(p)) continue;
    const NodeRole role = support[p].role;
    // An alias the program reads through (a clone of views that undo a stored layout).
    const bool readThrough = role == NodeRole::Alias && !model.nodes[p].inputs.empty() &&
                             undoesStoredLayout(model, support, model.nodes[p].inputs[0]);
    if (role != NodeRole::View && role != NodeRole::Constant && !readThrough) continue;
    members.insert(p);
    for (const std::string& in : model.nodes[p].inputs) pending.push_back(in);
  }
  return members;
}

Subgraph subgraph(const Model& model, const std::vector<NodeSupport>& support,
                  const std::vector<int>& nodes, BuiltProgram built, const std::string& name) {
  Subgraph s;
  s.name = name;
  s.program = std::move(built.program);
  s.inputs = std::move(built.inputs);
  s.outputs = std::move(built.outputs);
  s.causalMasks = std::move(built.causalMasks);
  for (int n : withReadNodes(model, support, nodes)) {
    if (built.readFromFramework.count(n)) continue;
    const std::string& name = sourceName(model.nodes[n]);
    if (std::find(s.nodes.begin(), s.nodes.end(), name) != s.nodes.end()) continue;
    s.nodes.push_back(name);
    s.ops.push_back(model.nodes[n].origin.empty() ? model.nodes[n].op : model.nodes[n].originOp);
  }
  return s;
}

// The subgraph over the KV buffers, or nullopt where the folded shapes do not fit the IR
// (a mask or a table broadcast over the query rows, say): then it reads the repeats.
std::optional<Subgraph> tryFolded(const FoldedHeads& folded, const std::vector<int>& nodes,
                                  const std::vector<std::string>& outputs, const std::string& name,
                                  const std::set<std::string>& readSwapped) {
  try {
    Subgraph s = subgraph(
        folded.model, folded.support, nodes,
        buildProgram(folded.model, folded.support, nodes, outputs, name, readSwapped, folded.tiled),
        name);
    s.headFold = folded.description;
    return s;
  } catch (const BuildFailure&) {
    return std::nullopt;
  }
}

}  // namespace

ImportedModel importModel(const std::string& path, const DimPins& pins, const DimRanges& ranges) {
  return partitionModel(loadModel(path, pins, ranges));
}

// A result the framework stores other than row-major (Value::storedLayout) that only
// subgraphs read, each in its logical order (a folded GQA attention reading RoPE's q and k),
// is written row-major: its readers take it as it is, with no copy between. Where the framework
// or a reader of the stored memory reads it, it stays stored as the framework stores it.
void storeForReaders(const Model& model, const std::set<std::string>& inSubgraphs,
                     ImportedModel& result) {
  std::set<std::string> readAsStored, readByFramework;
  for (const Subgraph& s : result.subgraphs) {
    for (const BoundInput& in : s.inputs) {
      if (in.bufferLayout != graph::Layout::RowMajor) readAsStored.insert(in.buffer);
    }
  }
  for (const Node& node : model.nodes) {
    if (inSubgraphs.count(sourceName(node))) continue;
    readByFramework.insert(node.inputs.begin(), node.inputs.end());
  }
  for (const std::string& out : model.graphOutputs) readByFramework.insert(out);
  for (Subgraph& s : result.subgraphs) {
    graph::Program& program = s.program;
    for (size_t o = 0; o < s.outputs.size(); ++o) {
      BoundOutput& out = s.outputs[o];
      if (out.layout == graph::Layout::RowMajor || readAsStored.count(out.value) ||
          readByFramework.count(out.value)) {
        continue;
      }
      out.layout = graph::Layout::RowMajor;
      program.tensors[program.outputs[o]].layout = graph::Layout::RowMajor;
    }
  }
}

ImportedModel partitionModel(const Model& loaded) {
  Model model = loaded;
  inferShapes(model);  // a LayerNormalization's rank decides the axes of its body
  expandFunctionOps(model);
  inferShapes(model);
  shapeComputedMasks(model);
  std::vector<NodeSupport> support = classifyNodes(model);
  if (mergeLeadingDims(model, support)) support = classifyNodes(model);
  const Graph g = edges(model);
  ImportedModel result;
  result.path = model.path;
  result.opset = model.opset;
  std::set<int> pinned;  // head transposes that stay views between subgraphs
  for (bool again = true; again;) {
    again = false;
    result.subgraphs.clear();
    std::set<std::string> names;
    const std::set<int> loose = looseAliases(model, support);
    for (const std::vector<int>& nodes : components(model, g, support, pinned, loose)) {
      const bool computes = std::any_of(
          nodes.begin(), nodes.end(), [&](int n) { return support[n].role == NodeRole::Compute; });
      if (!computes) {
        for (int n : nodes) {
          // A contiguous copy of views that undo a stored layout stays an alias: readers read
          // through it to the buffer (undoesStoredLayout).
          if (support[n].role == NodeRole::Alias && !model.nodes[n].inputs.empty() &&
              undoesStoredLayout(model, support, model.nodes[n].inputs[0])) {
            continue;
          }
          const std::string why =
              support[n].role == NodeRole::Part && !support[n].reason.empty()
                  ? support[n].reason
                  : "only converts or relabels a value between nodes left to the framework";
          support[n] = {NodeRole::Unsupported, why, false};
        }
        continue;
      }
      const char* lone =
          lonePositionOp(model, support, nodes)
              ? "one op on positions (converted from integers): a launch of its own gains "
                "nothing over the framework's kernel"
          : loneScaling(model, support, nodes)
              ? "one op by a one-element value: a launch of its own only scales a value the "
                "framework computes, which fuses it into that value's kernel"
              : nullptr;
      if (lone) {
        for (int n : nodes) support[n] = {NodeRole::Unsupported, lone, false};
        continue;
      }
      try {
        const std::string name = subgraphName(model, nodes, loose, names);
        const std::vector<std::string> outputs = outputsOf(model, g, nodes, loose);
        std::variant<PushedHeads, int> pushed = pushHeadTransposes(model, support, nodes, outputs);
        if (const int* view = std::get_if<int>(&pushed)) {
          pinned.insert(*view);
          again = true;
          break;
        }
        const PushedHeads& heads = std::get<PushedHeads>(pushed);
        std::optional<Subgraph> s;
        if (std::optional<FoldedHeads> folded =
                foldRepeatedHeads(heads.model, heads.support, nodes, outputs, heads.readSwapped)) {
          s = tryFolded(*folded, nodes, outputs, name, heads.readSwapped);
        }
        if (!s) {
          s = subgraph(
              heads.model, heads.support, nodes,
              buildProgram(heads.model, heads.support, nodes, outputs, name, heads.readSwapped),
              name);
        }
        result.subgraphs.push_back(std::move(*s));
      } catch (const BuildFailure& failure) {
        // A part that says why it may stay out (a mask several subgraphs read) says so here too.
        const NodeSupport& failed = support[failure.node];
        const std::string why = failed.role == NodeRole::Part && !failed.reason.empty()
                                    ? failed.reason
                                    : std::string(failure.what());
        support[failure.node] = {NodeRole::Unsupported, why, false};
        again = true;
        break;
      }
    }
  }
  std::set<std::string> inSubgraphs;
  for (const Subgraph& s : result.subgraphs) inSubgraphs.insert(s.nodes.begin(), s.nodes.end());
  std::set<std::string> listed;  // a body's parts left out are listed once, as their node
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    const Node& node = model.nodes[n];
    if (inSubgraphs.count(sourceName(node)) || !listed.insert(sourceName(node)).second) continue;
    std::string reason = support[n].reason;
    if (support[n].role == NodeRole::View)
      reason = "a view read only by nodes left to the framework";
    if (support[n].role == NodeRole::Constant) {
      reason = "a constant read only by nodes left to the framework";
    }
    if (support[n].role == NodeRole::Alias) {
      reason =
          "the framework converts it: a subgraph reads its result or one relabelled from it (the "
          "narrowest float along the way)";
    }
    if (!node.origin.empty()) reason = node.op + " of its body: " + reason;
    result.unsupported.push_back(
        {sourceName(node), node.origin.empty() ? node.op : node.originOp, reason});
  }
  storeForReaders(model, inSubgraphs, result);
  return result;
}

}  // namespace mugraph::onnx_import
