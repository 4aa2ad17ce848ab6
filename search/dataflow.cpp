#include "search/dataflow.h"

#include <algorithm>
#include <numeric>

#include "graph/dynamic_dims.h"
#include "graph/value_ranges.h"

namespace mugraph::search {
namespace {

using graph::OpKind;

class UnionFind {
 public:
  int add() {
    parent_.push_back(static_cast<int>(parent_.size()));
    return parent_.back();
  }
  int find(int v) {
    while (parent_[v] != v) v = parent_[v] = parent_[parent_[v]];
    return v;
  }
  void unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<int> parent_;
};

struct Labeller {
  UnionFind sets;
  std::vector<int64_t> extent;
  std::vector<bool> matmulDim, whole;
  std::vector<int> dynamicDim;

  int fresh(int64_t size) {
    extent.push_back(size);
    matmulDim.push_back(false);
    whole.push_back(false);
    dynamicDim.push_back(graph::kStaticDim);
    return sets.add();
  }
  DimLabel labelFor(int64_t size) { return size == 1 ? DimLabel{} : DimLabel{fresh(size)}; }
  void unify(const DimLabel& a, const DimLabel& b) {
    if (a.size() != b.size()) return;
    for (size_t i = 0; i < a.size(); ++i) sets.unite(a[i], b[i]);
  }
  void markMatmul(const DimLabel& label) {
    for (int v : label) matmulDim[v] = true;
  }
};

}  // namespace

int Dataflow::dimOf(int tensor, int var) const {
  const std::vector<DimLabel>& dims = tensors[tensor].dims;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!dims[d].empty() && dims[d][0] == var) return static_cast<int>(d);
  }
  return -1;
}

bool Dataflow::buriedIn(int tensor, int var) const {
  for (const DimLabel& label : tensors[tensor].dims) {
    for (size_t i = 1; i < label.size(); ++i) {
      if (label[i] == var) return true;
    }
  }
  return false;
}

bool Dataflow::isProgramOutput(int tensor) const {
  return std::find(outputs.begin(), outputs.end(), tensor) != outputs.end();
}

Dataflow buildDataflow(const graph::Program& program) {
  Labeller labeller;
  Dataflow flow;
  flow.tensors.resize(program.tensors.size());
  const std::vector<bool> squared = graph::squaredRangeTensors(program);
  for (size_t t = 0; t < program.tensors.size(); ++t) {
    flow.tensors[t].desc = program.tensors[t];
    flow.tensors[t].squaredRange = squared[t];
  }
  for (graph::TensorId t : program.inputs) {
    const graph::TensorDesc& desc = program.tensors[t];
    for (size_t d = 0; d < desc.shape.size(); ++d) {
      flow.tensors[t].dims.push_back(labeller.labelFor(desc.shape[d]));
      const int dim = graph::dynamicDimOf(desc, static_cast<int>(d));
      if (dim != graph::kStaticDim && !flow.tensors[t].dims.back().empty()) {
        labeller.dynamicDim[flow.tensors[t].dims.back()[0]] = dim;
      }
    }
  }
  for (const graph::KernelOp& op : program.ops) {
    FlowOp flowOp;
    flowOp.kind = op.kind;
    flowOp.attrs = op.attrs;
    flowOp.inputs = op.inputs;
    flowOp.output = op.outputs.at(0);
    const std::vector<DimLabel>& a = flow.tensors[op.inputs.at(0)].dims;
    std::vector<DimLabel> out;
    switch (graph::opInfo(op.kind).opClass) {
      case graph::OpClass::Unary:
        out = a;
        break;
      case graph::OpClass::Binary: {
        const std::vector<DimLabel>& b = flow.tensors[op.inputs.at(1)].dims;
        for (size_t d = 0; d < a.size(); ++d) {
          labeller.unify(a[d], b[d]);
          out.push_back(a[d].empty() ? b[d] : a[d]);
        }
        break;
      }
      case graph::OpClass::Matmul: {
        const std::vector<DimLabel>& b = flow.tensors[op.inputs.at(1)].dims;
        const size_t rank = a.size();
        for (size_t d = 0; d + 2 < rank; ++d) {
          labeller.unify(a[d], b[d]);
          out.push_back(a[d].empty() ? b[d] : a[d]);
        }
        labeller.unify(a[rank - 1], b[rank - 2]);
        labeller.markMatmul(a[rank - 2]);
        labeller.markMatmul(a[rank - 1]);
        labeller.markMatmul(b[rank - 1]);
        flowOp.reducedVars = a[rank - 1];
        out.push_back(a[rank - 2]);
        out.push_back(b[rank - 1]);
        break;
      }
      case graph::OpClass::Reduction: {
        out = a;
        const DimLabel& reduced = a.at(op.attrs.dim);
        if (graph::keepsShape(op.kind)) {
          for (int v : reduced) labeller.whole[v] = true;
          break;
        }
        const bool toOne = op.kind != OpKind::ReduceSum || op.attrs.to == 1;
        if (toOne) {
          flowOp.reducedVars = reduced;
          out[op.attrs.dim] = {};
        } else {
          // reduce_sum(to=k) of a plainly labelled dim: its two factors were never named, so
          // the op cannot be tiled; it stays a predefined op.
          flowOp.fusable = false;
          out[op.attrs.dim] = labeller.labelFor(op.attrs.to);
        }
        break;
      }
      default:
        flowOp.fusable = false;
        for (int64_t size : program.tensors[flowOp.output].shape) {
          out.push_back(labeller.labelFor(size));
        }
        break;
    }
    flow.tensors[flowOp.output].dims = out;
    flow.ops.push_back(std::move(flowOp));
  }
  // Renumber the union-find roots in order of first appearance.
  std::vector<int> number(labeller.extent.size(), -1);
  auto rename = [&](int v) {
    const int root = labeller.sets.find(v);
    if (number[root] < 0) {
      number[root] = static_cast<int>(flow.vars.size());
      flow.vars.push_back(IndexVar{labeller.extent[root], false, false});
    }
    IndexVar& var = flow.vars[number[root]];
    var.matmulDim = var.matmulDim || labeller.matmulDim[v];
    var.whole = var.whole || labeller.whole[v];
    if (var.dynamicDim == graph::kStaticDim) var.dynamicDim = labeller.dynamicDim[v];
    var.minExtent = var.dynamicDim == graph::kStaticDim
                        ? var.extent
                        : program.dims.at(static_cast<size_t>(var.dynamicDim)).min;
    return number[root];
  };
  for (FlowTensor& tensor : flow.tensors) {
    for (DimLabel& label : tensor.dims) {
      for (int& v : label) v = rename(v);
    }
  }
  for (FlowOp& op : flow.ops) {
    for (int& v : op.reducedVars) v = rename(v);
  }
  flow.inputs = program.inputs;
  flow.outputs = program.outputs;
  return flow;
}

}  // namespace mugraph::search
