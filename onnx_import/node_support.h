// What each ONNX node is to the importer, decided from the node and the shapes alone:
//  - Compute: maps to µgraph ops (program_builder.cpp has the mapping);
//  - Alias: computes nothing the IR stores differently (a float Cast, Identity, a reshape that
//    only adds or drops leading size-1 dims): inside a subgraph it is its input;
//  - View: relabels memory (a contiguous reshape, a swap of the last two dims, a swap of the
//    two dims before the last, the head transpose [b, s, h, d] -> [b, h, s, d]): never inside a
//    subgraph, but a subgraph reading its result reads the source buffer through it, with the
//    view's shape and, for a swap, the transposed or heads_transposed layout (graph/types.h);
//  - Constant: a Constant node, read by the mapping or made a program input like an initializer;
//  - Guard: the IsNaN of a softmax's NaN guard, `Where(IsNaN(p), 0, p)`, which exporters write
//    after a decomposed scaled_dot_product_attention; the Where is then an Alias of p (its
//    third input). A safe softmax is NaN only on a row whose every logit is -inf (a fully
//    masked query), which a causal mask never produces (a padding mask only on a padded
//    query's own row); the importer reads the guarded value as the softmax itself, so
//    attention stays one subgraph;
//  - Part: a node of one of RoPE's rotations (rope_patterns.h), rotate_half's
//    `Concat(Neg(Slice(x, h:2h)), Slice(x, 0:h))` on the last axis or rotate_pairs' slices,
//    Neg, new axes and Concat, each read only by the pattern: the pattern's head (rotate_half's
//    Concat, rotate_pairs' final Reshape) is Compute and maps the pattern whole to the IR's
//    op; its parts compute nothing of their own;
//  - an Add of a causal mask before a softmax (causal_masks.h) is Compute with `causal` set:
//    causal_mask of its other operand; the nodes making the mask are Parts;
//  - Unsupported: left to the framework, with the reason.
// The IR keeps a value's shape with its leading size-1 dims dropped (stripDims), so batch-1
// models and exporters' Unsqueeze/Squeeze of those dims need no reshape op.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/types.h"
#include "onnx_import/causal_masks.h"
#include "onnx_import/onnx_model.h"

namespace mugraph::onnx_import {

enum class NodeRole { Compute, Alias, View, Constant, Guard, Part, Unsupported };

// Why a node that only makes a causal mask is in no subgraph: several subgraphs read the mask
// as causal_mask, none reads its values.
inline constexpr const char* kMaskSourceReason =
    "makes a causal mask, which the subgraphs reading it take as causal_mask structure: its "
    "values are never read";

struct NodeSupport {
  NodeRole role = NodeRole::Unsupported;
  std::string reason;       // for Unsupported; for a Part, why it may stay in no subgraph
  bool transposes = false;  // a View that swaps the last two dims
  int aliasInput = 0;       // an Alias: the input it stands for
  bool swapsHeads = false;  // a View that swaps the two dims before the last (the heads)
  std::optional<CausalAdd> causal = std::nullopt;  // an Add read as causal_mask
};

// Whether the node has a part in the programs: computed, an alias, a guard or a part.
inline bool mapped(const NodeSupport& s) {
  return s.role == NodeRole::Compute || s.role == NodeRole::Alias || s.role == NodeRole::Guard ||
         s.role == NodeRole::Part;
}

// How a value read through `view` lies in its buffer, given how the view's input lies there
// (classification refuses any view whose result no layout describes).
graph::Layout viewLayout(graph::Layout before, const NodeSupport& view);

// Whether `value` is a view of a buffer stored other than row-major (Value::storedLayout)
// through views that undo that layout: its memory is in `value`'s row-major order, so an alias
// of it (PyTorch's clone making it contiguous) is that memory, and a reader reads the buffer.
bool undoesStoredLayout(const Model& model, const std::vector<NodeSupport>& support,
                        const std::string& value);

std::vector<NodeSupport> classifyNodes(const Model& model);

// The shape the IR gives a value: without its leading size-1 dims, but a value of rank 2 or
// more keeps two (a decode step's [1, 1, d] is the row [1, d], which a matmul takes); a
// scalar becomes [1].
graph::Dims stripDims(const graph::Dims& shape);

// The shape the IR reads a value at: stripDims of its shape, or with keptDims k, its dims
// before the last k merged into one (row_merge.h); a tiled value's (Value::tiling) stacked
// first.
graph::Dims irShape(const Value& value);

// Equal once every leading size-1 dim is dropped: a reshape between them relabels nothing.
bool sameUpToLeadingOnes(const graph::Dims& a, const graph::Dims& b);
// The same for two values, a dynamic dim equal only to itself (not to a static dim of its
// reference extent).
bool sameUpToLeadingOnes(const Value& a, const Value& b);
// Whether two values are one IR tensor: the same irShape, each dim the same dynamic dim or
// static in both.
bool sameIrShape(const Value& a, const Value& b);

}  // namespace mugraph::onnx_import
