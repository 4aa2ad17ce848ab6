// Turns one connected set of mapped ONNX nodes into a µgraph program: the op mapping.
//  - MatMul; Gemm with alpha, beta, a bias, and transposes of operands read from outside;
//  - Add/Sub/Mul/Div, broadcasting (right-aligned; an input of lower rank is declared with
//    leading size-1 dims), with a scalar constant: add_scalar / scale; c/x feeds a Mul as a
//    division;
//  - Exp, Sqrt, Sigmoid, Neg (scale by -1), Pow 2/1/0.5, Reciprocal (as a divisor);
//  - Softmax in the safe form: x − max(x) before exp, divided by the sum;
//  - an Add of a causal mask before a softmax (causal_masks.h): causal_mask, the mask unread;
//  - RoPE's Concat(Neg(Slice(x, h:2h)), Slice(x, 0:h)) (rope_patterns.h): rotate_half; its
//    interleaved form, the stack of Neg(Slice(x, 1::2)) and Slice(x, 0::2) flattened back to
//    x's shape: rotate_pairs;
//  - ReduceSum/ReduceMax per axis, ReduceMean as the sum scaled by 1/n;
//  - Cast between float types, Identity, reshapes of leading size-1 dims: aliases.
// Values the set reads from outside become program inputs (weights included), through the
// views they come by (with the transposed or heads_transposed layout they compose to);
// values read outside the set or graph outputs become program outputs.
// A node the IR cannot express here raises BuildFailure naming the node to leave out.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "onnx_import/node_support.h"

namespace mugraph::onnx_import {

struct BuildFailure : std::runtime_error {
  BuildFailure(int node, const std::string& reason) : std::runtime_error(reason), node(node) {}
  int node;  // index into Model::nodes of the node to leave to the framework
};

// A program input and the ONNX value whose memory it is.
struct BoundInput {
  std::string irName;
  std::string value;        // the ONNX value the program reads
  std::string buffer;       // the ONNX value whose memory holds it (differs through views)
  bool transposed = false;  // layout == Transposed
  graph::Layout layout = graph::Layout::RowMajor;
  Tiling tiling;  // times 1: the value as it is
  // How the program takes the buffer's memory to be laid out (Value::storedLayout, or
  // row-major where the program reads it in its logical order): the binding hands it over so.
  graph::Layout bufferLayout = graph::Layout::RowMajor;
  // The value's own dtype where the program reads it at a narrower one (an f32 cos times f16
  // q, which the framework computes in f32 and casts back): the binding converts it.
  std::optional<graph::DType> castFrom;
};

struct BoundOutput {
  std::string irName;
  std::string value;
  graph::Layout layout = graph::Layout::RowMajor;  // as the framework stores the value
};

// An Add of a causal mask the program computes as causal_mask (causal_masks.h).
struct CausalMaskRead {
  std::string node;     // the Add
  std::string mask;     // the mask value, which the program does not read
  int64_t queries = 0;  // causal_mask's queries=
};

struct BuiltProgram {
  graph::Program program;
  std::vector<BoundInput> inputs;
  std::vector<BoundOutput> outputs;
  // Aliases of the set (casts) whose result, or a value after them, the program reads as an
  // input: the framework computes them, so they are not the subgraph's own.
  std::set<int> readFromFramework;
  std::vector<CausalMaskRead> causalMasks;
};

// `nodes`: indices into model.nodes, in file order; `outputs`: the values read outside them;
// `readSwapped`: values from outside read with their heads swapped (heads_pushdown.h);
// `tiled`: values from outside read repeated (their shapes in `model` are the repeated ones).
BuiltProgram buildProgram(const Model& model, const std::vector<NodeSupport>& support,
                          const std::vector<int>& nodes, const std::vector<std::string>& outputs,
                          const std::string& name, const std::set<std::string>& readSwapped = {},
                          const std::map<std::string, Tiling>& tiled = {});

// [A-Za-z_][A-Za-z0-9_]* from an ONNX name ("/layers.0/Add_output_0" -> "layers_0_Add_output_0").
std::string sanitizeName(const std::string& onnxName);

}  // namespace mugraph::onnx_import
