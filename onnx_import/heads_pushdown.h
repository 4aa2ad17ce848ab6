// The head transpose of a value computed in the subgraph. A Transpose [.., s, h, d] ->
// [.., h, s, d] (a heads_transposed view, node_support.h) whose input the subgraph computes
// (Qwen3's per-head q/k RMSNorm before RoPE, GPT-J's RoPE) joins the subgraph when every node
// computing that input acts along the last axis alone (element-wise ops, reductions and
// softmax over the last axis, rotate_half, rotate_pairs' group): such nodes compute the same
// per (s, h) row in either order of s and h, so the subgraph computes them directly in the
// transposed order, reading their inputs from outside through the heads_transposed layout, and
// the Transpose is the value itself. Where a node mixes those dims (a matmul, a reduction over
// them, a value read elsewhere in the original order) the Transpose stays a view between two
// subgraphs.
// A Transpose with the same perm that moves no data (a decode step's one row, [1, 1, h, d] ->
// [1, h, 1, d]: a contiguous view) joins the same way.
#pragma once

#include <set>
#include <string>
#include <variant>
#include <vector>

#include "onnx_import/node_support.h"
#include "onnx_import/onnx_model.h"

namespace mugraph::onnx_import {

// Whether `view` is a head transpose of a value computed by a mapped node: one the partition
// may join to the subgraph of that node.
bool joinsAsHeadTranspose(const Model& model, const std::vector<NodeSupport>& support, int view);

struct PushedHeads {
  Model model;                        // the values computed before the transposes, transposed
  std::vector<NodeSupport> support;   // the transposes: aliases
  std::set<std::string> readSwapped;  // outside values read through a heads_transposed layout
};

// The subgraph `nodes` (outputs `outputs`) with each joined head transpose pushed to its
// inputs; or the index of a transpose that cannot be pushed (it then stays a view).
std::variant<PushedHeads, int> pushHeadTransposes(const Model& model,
                                                  const std::vector<NodeSupport>& support,
                                                  const std::vector<int>& nodes,
                                                  const std::vector<std::string>& outputs);

}  // namespace mugraph::onnx_import
