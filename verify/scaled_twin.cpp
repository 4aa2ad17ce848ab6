#include "verify/scaled_twin.h"

#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "graph/error.h"
#include "graph/tile_splits.h"
#include "graph/validate.h"

namespace mugraph::verify {
namespace {

using graph::BlockGraph;
using graph::BlockOp;
using graph::Dims;
using graph::KernelGraph;
using graph::KernelOp;
using graph::OpKind;

// Dims of every tensor of both graphs, kernel tensors and block tiles alike, joined into
// classes wherever an op ties one dim to another; a class is `mixed` once some op combines
// elements along it.
class DimClasses {
 public:
  int add(int64_t extent, bool kernelLevel) {
    parent_.push_back(static_cast<int>(parent_.size()));
    mixed_.push_back(false);
    extent_.push_back(extent);
    kernelLevel_.push_back(kernelLevel);
    return parent_.back();
  }
  int find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void join(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    parent_[b] = a;
    mixed_[a] = mixed_[a] || mixed_[b];
  }
  void mix(int a) { mixed_[find(a)] = true; }
  bool mixed(int a) { return mixed_[find(a)]; }
  int64_t extent(int a) const { return extent_[a]; }
  bool kernelLevel(int a) const { return kernelLevel_[a]; }
  int size() const { return static_cast<int>(parent_.size()); }

 private:
  std::vector<int> parent_;
  std::vector<bool> mixed_;
  std::vector<int64_t> extent_;
  std::vector<bool> kernelLevel_;
};

using DimIds = std::vector<int>;  // one class node per dim of a tensor

// Ties the dims of an op's operands and result as its semantics does (graph/ops.h), and marks
// the dims it combines elements along. Operands and result are given by their dims' nodes and
// shapes. An op this does not know mixes everything it touches.
void tieOp(DimClasses& classes, OpKind kind, const graph::OpAttrs& attrs,
           const std::vector<const DimIds*>& in, const std::vector<const Dims*>& inShapes,
           const DimIds& out, const Dims& outShape) {
  const auto mixAll = [&] {
    for (const DimIds* ids : in) {
      for (int id : *ids) classes.mix(id);
    }
    for (int id : out) classes.mix(id);
  };
  const graph::OpInfo& info = graph::opInfo(kind);
  const size_t rank = out.size();
  for (const DimIds* ids : in) {
    if (ids->size() != rank) return mixAll();
  }
  if (kind == OpKind::CausalMask && in.size() == 1 && rank >= 2) {
    // Each element's fate depends on its row and column positions.
    for (size_t d = 0; d < rank; ++d) classes.join((*in[0])[d], out[d]);
    classes.mix(out[rank - 1]);
    classes.mix(out[rank - 2]);
    return;
  }
  if (info.opClass == graph::OpClass::Unary ||
      (info.opClass == graph::OpClass::Accumulator && in.size() == 1)) {
    for (size_t d = 0; d < rank; ++d) classes.join((*in[0])[d], out[d]);
    return;
  }
  if (info.opClass == graph::OpClass::Binary ||
      (info.opClass == graph::OpClass::Accumulator && in.size() == 2)) {
    // A broadcast operand (extent 1 against more) is the same for every position: not tied.
    for (size_t i = 0; i < in.size(); ++i) {
      for (size_t d = 0; d < rank; ++d) {
        if ((*inShapes[i])[d] == outShape[d]) classes.join((*in[i])[d], out[d]);
      }
    }
    return;
  }
  if (info.opClass == graph::OpClass::Matmul && in.size() == 2 && rank >= 2) {
    const DimIds& a = *in[0];
    const DimIds& b = *in[1];
    for (size_t d = 0; d + 2 < rank; ++d) {
      classes.join(a[d], out[d]);
      classes.join(b[d], out[d]);
    }
    classes.join(a[rank - 2], out[rank - 2]);
    classes.join(b[rank - 1], out[rank - 1]);
    classes.join(a[rank - 1], b[rank - 2]);
    classes.mix(a[rank - 1]);  // the contraction
    return;
  }
  if (info.opClass == graph::OpClass::Reduction && in.size() == 1 && attrs.dim >= 0 &&
      static_cast<size_t>(attrs.dim) < rank) {
    for (size_t d = 0; d < rank; ++d) classes.join((*in[0])[d], out[d]);
    classes.mix(out[attrs.dim]);
    return;
  }
  mixAll();
}

// Where a block graph's Input or Output op meets its kernel tensor.
struct Boundary {
  int graph = 0;   // 0 reference, 1 candidate
  int kernel = 0;  // kernel op index
  int blockOp = 0;
  int tensor = 0;  // kernel tensor
  bool input = true;
};

struct Analysis {
  DimClasses classes;
  std::vector<DimIds> kernelDims[2];  // per graph, per kernel tensor
  // per graph, per kernel op (block graphs only), per block tensor
  std::vector<std::vector<DimIds>> blockDims[2];
  std::vector<Boundary> boundaries;
};

DimIds addDims(DimClasses& classes, const Dims& shape, bool kernelLevel) {
  DimIds ids;
  for (int64_t extent : shape) ids.push_back(classes.add(extent, kernelLevel));
  return ids;
}

void analyzeGraph(Analysis& a, int g, const KernelGraph& graph) {
  for (const graph::TensorDesc& t : graph.tensors) {
    a.kernelDims[g].push_back(addDims(a.classes, t.shape, true));
  }
  a.blockDims[g].resize(graph.ops.size());
  for (size_t k = 0; k < graph.ops.size(); ++k) {
    const KernelOp& op = graph.ops[k];
    if (!op.block) {
      std::vector<const DimIds*> in;
      std::vector<const Dims*> shapes;
      for (graph::TensorId t : op.inputs) {
        in.push_back(&a.kernelDims[g][t]);
        shapes.push_back(&graph.tensors[t].shape);
      }
      if (op.outputs.size() != 1) {
        for (const DimIds* ids : in) {
          for (int id : *ids) a.classes.mix(id);
        }
        continue;
      }
      const graph::TensorId out = op.outputs[0];
      tieOp(a.classes, op.kind, op.attrs, in, shapes, a.kernelDims[g][out],
            graph.tensors[out].shape);
      continue;
    }
    const BlockGraph& block = *op.block;
    std::vector<DimIds>& tiles = a.blockDims[g][k];
    for (const graph::BlockTensor& t : block.tensors) {
      tiles.push_back(addDims(a.classes, t.shape, false));
    }
    for (size_t b = 0; b < block.ops.size(); ++b) {
      const BlockOp& bop = block.ops[b];
      if (bop.kind == OpKind::Input || bop.kind == OpKind::Output) {
        const bool input = bop.kind == OpKind::Input;
        const graph::TensorId tile = input ? bop.output : bop.inputs.at(0);
        const graph::TensorId tensor =
            input ? op.inputs.at(bop.kernelTensor) : op.outputs.at(bop.kernelTensor);
        const DimIds& kernelIds = a.kernelDims[g][tensor];
        const DimIds& tileIds = tiles[tile];
        if (kernelIds.size() != tileIds.size()) {
          for (int id : kernelIds) a.classes.mix(id);
          continue;
        }
        for (size_t d = 0; d < kernelIds.size(); ++d) a.classes.join(kernelIds[d], tileIds[d]);
        if (input && bop.fmap != graph::kReplicated && bop.fmap < static_cast<int>(tileIds.size())) {
          a.classes.mix(tileIds[bop.fmap]);  // iterations combine along it
        }
        a.boundaries.push_back({g, static_cast<int>(k), static_cast<int>(b), tensor, input});
        continue;
      }
      std::vector<const DimIds*> in;
      std::vector<const Dims*> shapes;
      for (graph::TensorId t : bop.inputs) {
        in.push_back(&tiles[t]);
        shapes.push_back(&block.tensors[t].shape);
      }
      tieOp(a.classes, bop.kind, bop.attrs, in, shapes, tiles[bop.output],
            block.tensors[bop.output].shape);
    }
  }
}

// The grid axis along which a block op (Input: imap, Output: omap) cuts dim d, or -1.
int cuttingAxis(const BlockGraph& block, const BlockOp& bop, int d) {
  const graph::AxisMap& map = bop.kind == OpKind::Input ? bop.imap : bop.omap;
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (block.grid[axis] > 1 && map[axis] == d) return axis;
  }
  return -1;
}

std::vector<Dims> kernelInputShapes(const KernelGraph& graph, const KernelOp& op) {
  std::vector<Dims> shapes;
  for (graph::TensorId t : op.inputs) shapes.push_back(graph.tensors[t].shape);
  return shapes;
}

// Per class (root), what the block graphs say about cutting it.
struct ClassCut {
  bool shrinkable = true;
  int64_t extent = -1;
  std::set<int64_t> partSizes;
  // per (graph, kernel): the grid axis cutting it and its part size
  std::map<std::pair<int, int>, std::pair<int, int64_t>> kernels;
};

int64_t lcmCapped(int64_t a, int64_t b, int64_t cap) {
  const int64_t l = a / std::gcd(a, b) * b;
  return l > cap ? cap + 1 : l;
}

// What the twin saves: matmul work, or for a graph without matmuls its elements.
double savedWork(const KernelGraph& graph) {
  const double matmuls = matmulWork(graph);
  if (matmuls > 0) return matmuls;
  double elements = 0;
  for (const graph::TensorDesc& t : graph.tensors) {
    elements += static_cast<double>(graph::elementCount(t.shape));
  }
  return elements;
}

// Whether the twin's block graph cuts every tile as the real one does, part sizes, loops and
// the size of every last part alike.
bool sameCuts(const KernelGraph& real, const KernelGraph& twin) {
  for (size_t k = 0; k < real.ops.size(); ++k) {
    if (!real.ops[k].block) continue;
    const std::vector<graph::TileSplit> a =
        graph::blockTileSplits(*real.ops[k].block, kernelInputShapes(real, real.ops[k]));
    const std::vector<graph::TileSplit> b =
        graph::blockTileSplits(*twin.ops[k].block, kernelInputShapes(twin, twin.ops[k]));
    if (a.size() != b.size()) return false;
    for (size_t t = 0; t < a.size(); ++t) {
      if (a[t].size() != b[t].size()) return false;
      for (size_t d = 0; d < a[t].size(); ++d) {
        const graph::DimSplit& x = a[t][d];
        const graph::DimSplit& y = b[t][d];
        if (x.gridAxis != y.gridAxis || x.loop != y.loop || x.blockTile != y.blockTile ||
            x.tile != y.tile || x.iterations() != y.iterations() ||
            x.extent - (x.realParts() - 1) * x.blockTile !=
                y.extent - (y.realParts() - 1) * y.blockTile ||
            (x.realParts() < x.parts()) != (y.realParts() < y.parts()) ||
            x.lastTile() != y.lastTile() || x.hasEmptyIterations() != y.hasEmptyIterations() ||
            (x.parts() > 1) != (y.parts() > 1)) {
          return false;
        }
      }
    }
  }
  return true;
}

}  // namespace

double matmulWork(const KernelGraph& graph) {
  double total = 0;
  for (const KernelOp& op : graph.ops) {
    if (op.kind != OpKind::Matmul || op.block) continue;
    total += static_cast<double>(graph::elementCount(graph.tensors[op.outputs[0]].shape)) *
             static_cast<double>(graph.tensors[op.inputs[0]].shape.back());
  }
  return total;
}

std::string ScaledTwin::describe() const {
  std::ostringstream out;
  for (size_t i = 0; i < dims.size(); ++i) {
    const ShrunkDim& d = dims[i];
    out << (i ? ", " : "") << "dim " << d.dim << " of '" << d.tensor << "' " << d.from << " -> "
        << d.to;
    if (d.period > 1) out << " (parts of " << d.period << ")";
  }
  return out.str();
}

namespace {

std::optional<ScaledTwin> twinOf(const KernelGraph& reference, const KernelGraph& candidate,
                                 double minRatio) {
  const KernelGraph* graphs[2] = {&reference, &candidate};
  Analysis a;
  analyzeGraph(a, 0, reference);
  analyzeGraph(a, 1, candidate);
  // The interface is one set of tensors: inputs and outputs tie by name.
  for (const std::vector<graph::TensorId>* ids : {&reference.inputs, &reference.outputs}) {
    for (graph::TensorId t : *ids) {
      const std::optional<graph::TensorId> other = candidate.findTensor(reference.tensors[t].name);
      if (!other || candidate.tensors[*other].shape != reference.tensors[t].shape) {
        return std::nullopt;
      }
      for (size_t d = 0; d < reference.tensors[t].shape.size(); ++d) {
        a.classes.join(a.kernelDims[0][t][d], a.kernelDims[1][*other][d]);
      }
    }
  }

  // Every kernel tensor dim of a class has the class's extent.
  std::map<int, ClassCut> cuts;
  for (int g = 0; g < 2; ++g) {
    for (const DimIds& ids : a.kernelDims[g]) {
      for (int id : ids) {
        ClassCut& cut = cuts[a.classes.find(id)];
        if (cut.extent < 0) cut.extent = a.classes.extent(id);
        if (cut.extent != a.classes.extent(id)) cut.shrinkable = false;
        if (a.classes.mixed(id)) cut.shrinkable = false;
      }
    }
  }
  // Every block graph touching a class cuts it over one grid axis of its own, in parts of one
  // size, and that axis cuts nothing else.
  std::map<std::pair<std::pair<int, int>, int>, int> axisClass;  // ((graph, kernel), axis) -> class
  for (const Boundary& b : a.boundaries) {
    const KernelOp& op = graphs[b.graph]->ops[b.kernel];
    const BlockGraph& block = *op.block;
    const BlockOp& bop = block.ops[b.blockOp];
    const std::vector<graph::TileSplit> splits =
        graph::blockTileSplits(block, kernelInputShapes(*graphs[b.graph], op));
    const graph::TensorId tile = b.input ? bop.output : bop.inputs.at(0);
    const DimIds& ids = a.kernelDims[b.graph][b.tensor];
    for (size_t d = 0; d < ids.size(); ++d) {
      const int cls = a.classes.find(ids[d]);
      ClassCut& cut = cuts[cls];
      const int axis = cuttingAxis(block, bop, static_cast<int>(d));
      const std::pair<int, int> kernel{b.graph, b.kernel};
      if (axis >= 0) {
        const auto [it, fresh] = axisClass.try_emplace({kernel, axis}, cls);
        if (!fresh && it->second != cls) {
          cut.shrinkable = false;
          cuts[it->second].shrinkable = false;
        }
      }
      if (!cut.shrinkable) continue;
      if (axis < 0 || tile >= static_cast<int>(splits.size()) || splits[tile].size() != ids.size()) {
        cut.shrinkable = false;
        continue;
      }
      const int64_t part = splits[tile][d].blockTile;
      const auto [it, fresh] = cut.kernels.try_emplace(kernel, axis, part);
      if (!fresh && it->second != std::pair<int, int64_t>{axis, part}) cut.shrinkable = false;
      cut.partSizes.insert(part);
    }
  }

  // Each shrinkable class keeps one whole period of its part sizes and its remainder.
  std::map<int, int64_t> newExtent;
  std::map<int, int64_t> periodOf;
  for (auto& [cls, cut] : cuts) {
    if (!cut.shrinkable || cut.extent <= 3) continue;
    int64_t period = 1;
    for (int64_t part : cut.partSizes) period = lcmCapped(period, part, cut.extent);
    if (period > cut.extent) continue;
    // n = (m - 1) L + r with 0 < r <= L becomes L + r.
    const int64_t periods = (cut.extent + period - 1) / period;
    if (periods <= 2) continue;
    newExtent[cls] = cut.extent - (periods - 2) * period;
    periodOf[cls] = period;
  }
  if (newExtent.empty()) return std::nullopt;

  ScaledTwin twin;
  twin.reference = reference;
  twin.candidate = candidate;
  KernelGraph* twins[2] = {&twin.reference, &twin.candidate};
  for (int g = 0; g < 2; ++g) {
    KernelGraph& t = *twins[g];
    for (size_t i = 0; i < t.tensors.size(); ++i) {
      for (size_t d = 0; d < t.tensors[i].shape.size(); ++d) {
        const auto it = newExtent.find(a.classes.find(a.kernelDims[g][i][d]));
        if (it != newExtent.end()) t.tensors[i].shape[d] = it->second;
      }
    }
    for (size_t k = 0; k < t.ops.size(); ++k) {
      if (!t.ops[k].block) continue;
      BlockGraph& block = *t.ops[k].block;
      const std::vector<graph::TileSplit> splits = graph::blockTileSplits(
          *graphs[g]->ops[k].block, kernelInputShapes(*graphs[g], graphs[g]->ops[k]));
      for (const auto& [cls, extent] : newExtent) {
        const auto it = cuts[cls].kernels.find({g, static_cast<int>(k)});
        if (it == cuts[cls].kernels.end()) continue;
        const auto [axis, part] = it->second;
        block.grid[axis] -= (cuts[cls].extent - extent) / part;
      }
      // Clusters group blocks for launch and change nothing a block computes
      // (graph::BlockGraph::cluster); a shrunk grid need not hold whole clusters.
      block.cluster = {1, 1, 1};
      // Inputs reading a shrunk dim declare the real tiles, so the parts keep their size.
      for (BlockOp& bop : block.ops) {
        if (bop.kind != OpKind::Input || !bop.tile.empty()) continue;
        const graph::TensorId tensor = t.ops[k].inputs.at(bop.kernelTensor);
        bool shrunk = false;
        for (int id : a.kernelDims[g][tensor]) shrunk = shrunk || newExtent.count(a.classes.find(id));
        if (!shrunk) continue;
        const graph::TileSplit& split = splits.at(bop.output);
        Dims declared;
        for (const graph::DimSplit& s : split) declared.push_back(s.tile);
        bop.tile = declared;
      }
    }
  }

  // The twins must be valid graphs cut exactly as the real ones; otherwise check the real ones.
  try {
    for (int g = 0; g < 2; ++g) {
      if (twins[g]->isProgram()) {
        graph::validateProgram(*twins[g]);
      } else {
        graph::validateKernelGraph(*twins[g]);
      }
      if (!sameCuts(*graphs[g], *twins[g])) return std::nullopt;
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }

  for (const auto& [cls, extent] : newExtent) {
    // Named by the reference's first tensor carrying the class.
    for (size_t i = 0; i < reference.tensors.size() && twin.dims.size() < newExtent.size(); ++i) {
      bool named = false;
      for (size_t d = 0; d < reference.tensors[i].shape.size() && !named; ++d) {
        if (a.classes.find(a.kernelDims[0][i][d]) == cls) {
          twin.dims.push_back({reference.tensors[i].name, static_cast<int>(d), cuts[cls].extent,
                               extent, periodOf[cls]});
          named = true;
        }
      }
      if (named) break;
    }
  }
  const double realWork = savedWork(reference);
  const double twinWork = savedWork(twin.reference);
  twin.workRatio = twinWork > 0 ? realWork / twinWork : 1.0;
  if (twin.workRatio < minRatio) return std::nullopt;
  return twin;
}

}  // namespace

std::optional<ScaledTwin> scaledTwin(const KernelGraph& reference, const KernelGraph& candidate,
                                     double minRatio) {
  // A graph the analysis cannot follow (one that would not validate) is checked as it is,
  // where the check reports its problem.
  try {
    return twinOf(reference, candidate, minRatio);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace mugraph::verify
