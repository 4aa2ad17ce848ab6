// The program as the search sees it: every dim of every tensor labelled with index variables
// (einsum style), found by unifying dims through the ops. A block graph's grid and for-loop
// split index variables, so one choice ("split the KV sequence 16 ways") fixes the imap,
// fmap and omap of every tile consistently. A dim is a list of variables, outermost first:
// a partial result written by a grid-split reduction has dim [split, original...], which its
// combine op reduce_sum(to=original) sums over.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/ir.h"

namespace mugraph::search {

struct IndexVar {
  int64_t extent = 1;
  bool matmulDim = false;  // some matmul reads it as M, N or K: keep tiles tensor-core sized
  bool whole = false;      // rms_norm needs it whole in one tile: never split
  // The program's dynamic dim (graph::KernelGraph::dims) whose length this is, or
  // graph::kStaticDim; `extent` is then its reference (the range's max).
  int dynamicDim = graph::kStaticDim;
  // The shortest length it takes: the range's min for a dynamic dim, else `extent`.
  int64_t minExtent = 1;
};

using DimLabel = std::vector<int>;  // index variables, outermost first; empty: a size-1 dim

struct FlowTensor {
  graph::TensorDesc desc;
  std::vector<DimLabel> dims;
  // Its magnitude can be the square of the program's values' (graph/value_ranges.h): stored
  // between kernels, it needs more range than 16 bits.
  bool squaredRange = false;
};

struct FlowOp {
  graph::OpKind kind = graph::OpKind::Matmul;
  graph::OpAttrs attrs;
  std::vector<int> inputs;  // FlowTensor ids
  int output = -1;
  std::vector<int> reducedVars;  // summed (or maxed) over by this op
  bool fusable = true;           // may sit in a block graph (false: predefined op only)
  // A rescaling combine of split partials (FlashDecoding), made by the search, never a
  // predefined op: inputs are the partial sums and the partial maxes they were computed
  // with; the result is Σ_j x_j·exp(m_j − max_j m_j), summed over the split (kind ReduceSum,
  // attrs as that combine's). Only a block graph whose for-loop walks the partials runs it.
  bool rescaledCombine = false;
};

struct Dataflow {
  std::vector<IndexVar> vars;
  std::vector<FlowTensor> tensors;
  std::vector<int> inputs;
  std::vector<FlowOp> ops;  // topological order: the canonical order of the enumeration
  std::vector<int> outputs;

  // Dim of `tensor` whose outermost variable is `var`, or -1.
  int dimOf(int tensor, int var) const;
  // Whether `var` appears in `tensor` somewhere other than as a dim's outermost variable
  // (then a contiguous split of it is impossible).
  bool buriedIn(int tensor, int var) const;
  bool isProgramOutput(int tensor) const;
};

// Labels `program` (predefined ops only). Deterministic: variables numbered in order of
// first appearance.
Dataflow buildDataflow(const graph::Program& program);

}  // namespace mugraph::search
