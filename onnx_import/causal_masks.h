// Causal masks added to attention's logits, read as structure. An `Add(scores, M)` whose result
// only a softmax over the last axis reads, where M is a causal mask, is the IR's
// causal_mask(scores, queries=q) (graph/ops.h): the kernels then never load or compute the
// blocks above the diagonal, where an added M would be read from memory and added everywhere.
// M is a causal mask when
//  - our vocabulary's `CausalMask` node makes it (what the FX front end writes for SDPA's
//    is_causal; it has no ONNX meaning and is accepted only here), square: SDPA's is_causal
//    aligns the diagonal top-left, which is the IR's bottom-right only where rows == cols;
//  - its values are constant (an initializer, a Constant node, a folded constant, or a value
//    the graph computes from such alone, evaluated: constant_eval.h) and form the causal
//    pattern (causal_pattern.h), decided by the values alone;
//  - a float Cast, an Identity, or a reshape or Expand that keeps its last two dims (a
//    broadcast over batch and heads) of such a mask.
// Any other mask (one computed from the graph's inputs, a padding mask, a sliding window)
// stays an added tensor.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "onnx_import/onnx_model.h"

namespace mugraph::onnx_import {

struct CausalAdd {
  int maskInput = 1;    // the Add's operand that is the mask
  std::string mask;     // its value
  int64_t queries = 0;  // causal_mask's queries=: query rows per sequence of the mask
};

struct CausalMasks {
  std::map<int, CausalAdd> adds;  // Add node -> how it reads its mask
  // Nodes that only make masks these Adds read (the CausalMask node, the casts and reshapes of
  // a constant mask, the nodes computing one from constants): they compute nothing of their
  // own once the Adds are causal_mask.
  std::set<int> sources;
};

CausalMasks findCausalMasks(const Model& model);

// The shapes of the values a mask computed from constants passes through, which shape
// inference does not follow (Range, comparisons, Where, Trilu): the evaluation knows them, and
// with them the Add of the mask maps. Run after inferShapes (model_shapes.h), which it reruns.
void shapeComputedMasks(Model& model);

}  // namespace mugraph::onnx_import
