// Leading dims merged: a batch of sequences read as rows, or a batch of heads as matrices.
//
// A model run at batch b > 1 holds its activations as [b, s, h]; PyTorch's linear layers view
// them as [b·s, h] for the matmul and back, and an eagerly written attention views its
// [b, heads, s, d] values as [b·heads, s, d] for bmm. The IR keeps a value's shape
// (stripDims), so the two views would be different tensors and each reshape between them a
// boundary between subgraphs: Llama's layer cut into 13 pieces at batch 2 where batch 1 has 3.
//
// Where every mapped op that touches a value acts on its last dim alone, or on its last two,
// its leading dims can be one: element-wise ops whose operands are the same shape or broadcast
// only over the merged dims (a norm's weight [h], a per-row column [b, s, 1]), reductions and
// softmax over the kept dims, a matmul with a matrix ([b, s, k] · [k, n], rows kept) or batched
// over the merged dims (matrices kept), causal_mask, casts and aliases, a swap of the last two
// dims. Such a value is read by the IR with its leading dims merged (Value::keptDims, irShape):
// [b·s, h] (rows) or [b·heads, s, d] (matrices). The reshapes between it and that form relabel
// nothing: they are aliases inside one subgraph. A table broadcast over the leading dims but
// not the rest (GPT-2's position embeddings [1, s, h] added to [b, s, h]) that the subgraph
// reads from memory is read stacked over them (Value::tiling): [b·s, h]. A value any mapped op
// reads or writes with its leading dims apart (head transposes, such a table computed in the
// graph, a dynamic dim) keeps its shape, and with it every value its ops connect it to.
#pragma once

#include <vector>

#include "onnx_import/node_support.h"
#include "onnx_import/onnx_model.h"

namespace mugraph::onnx_import {

// Sets keptDims on every value of rank 3 or more (leading 1s dropped) whose leading dims can
// be merged, given each node's role (nodes left to the framework read and write memory,
// whatever its shape in the IR): 1 where rows suit every op it meets, else 2. Whether any
// value was marked: the roles are then classified again, since a reshape between merged forms
// is an alias.
bool mergeLeadingDims(Model& model, const std::vector<NodeSupport>& support);

}  // namespace mugraph::onnx_import
