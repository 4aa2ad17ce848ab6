// GQA's repeated KV heads as views. Exporters write grouped-query attention as
// Unsqueeze → Expand → Reshape of the KV tensors (H = kv · rep heads), which copies data. A
// subgraph that reads such repeats and computes row by row in each head (attention: matmuls
// with the repeated tensor as the right operand, element-wise ops, reductions over the last
// dims) computes the same from the KV buffers themselves when every value with the H query
// heads is read as kv groups of rep·rows ([.., H, S, X] is the contiguous view
// [.., kv, rep·S, X]). This is the fold the built-in GQA programs are written in; here it is
// found in the model, and where any op of the subgraph would mix heads or rows it is not
// applied (the subgraph then reads the repeats the framework makes). An input without the
// heads that an element-wise op broadcasts over them (a causal mask [S, T]) is read repeated
// along its rows, once per query head of a group (Tiling, program_builder.h).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "onnx_import/node_support.h"
#include "onnx_import/onnx_model.h"
#include "onnx_import/program_builder.h"

namespace mugraph::onnx_import {

struct FoldedHeads {
  Model model;                          // value shapes rewritten for the fold
  std::vector<NodeSupport> support;     // the Expands of the repeats are views
  std::string description;              // "8 query heads as 2 KV groups of 4"
  std::map<std::string, Tiling> tiled;  // inputs broadcast over the folded rows, read repeated
};

// nullopt when the nodes read no repeated heads, or the fold does not apply to them.
// `outputs`: the values the nodes' subgraph returns; `readSwapped`: inputs it reads with their
// heads swapped (heads_pushdown.h), which do not fold.
std::optional<FoldedHeads> foldRepeatedHeads(const Model& model,
                                             const std::vector<NodeSupport>& support,
                                             const std::vector<int>& nodes,
                                             const std::vector<std::string>& outputs,
                                             const std::set<std::string>& readSwapped);

}  // namespace mugraph::onnx_import
