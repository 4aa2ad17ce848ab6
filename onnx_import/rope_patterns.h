// RoPE's rotations as exporters write them, found as whole node groups so that each maps to
// one IR op (graph/ops.h) instead of leaving its Slices, Neg and Concat to the framework:
//  - rotate_half (Llama, NeoX): Concat(Neg(Slice(x, h:2h)), Slice(x, 0:h)) on the last axis;
//  - rotate_pairs (GPT-J, Cohere, CodeGen, GLM: `torch.stack((-x[..., 1::2], x[..., ::2]),
//    -1).flatten(-2)`): Slice(x, 1::2) and Slice(x, 0::2) on the last axis, Neg of the first,
//    each given a new last axis of 1 (Unsqueeze, or a Reshape that only appends it), Concat on
//    that axis, and a Reshape or Flatten back to x's shape.
// Each match is exact: a group that differs anywhere (another order, another step or start,
// a part that something else also reads) is not one, and its nodes stay with the framework
// with the reason their op has. The head (the Concat, the final Reshape) maps the group; the
// other nodes are its parts (node_support.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "onnx_import/onnx_model.h"

namespace mugraph::onnx_import {

struct RotationPattern {
  graph::OpKind kind;      // RotateHalf or RotatePairs
  std::string x;           // the rotated value: the slices' input
  std::vector<int> parts;  // every node of the group but the head
};

// The rotations of the model: head node index -> its pattern.
std::map<int, RotationPattern> findRotations(const Model& model);

}  // namespace mugraph::onnx_import
