// Reads an ONNX file (Debian's libonnx protobuf classes) into plain records the importer
// works on: every value with its element type and static shape (or why it has none), the
// nodes in file order, and the small constants the op mapping needs (exponents, eps, axes,
// target shapes). Initializers stay values: they become program inputs, since the search
// needs their shapes and dtypes, never their contents.
//
// Everything a user can get wrong is a UserError naming the file and the reason: a file
// that does not parse, an opset outside 13..21, a dim with neither a size nor a name, a node
// reading a value nothing defines.
//
// A symbolic dim (ONNX dim_param) is a dynamic dim of the programs (graph/dynamic_dims.h,
// issue 28): the same name is the same dim, its range [1, 65536] unless `--dim-range
// name=min:max` says otherwise, and its extent in every shape the range's max (the reference
// length). `--dim name=value` pins it to a static size instead, and takes precedence.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "graph/types.h"
#include "onnx_import/causal_pattern.h"

namespace mugraph::onnx_import {

inline constexpr int64_t kMinOpset = 13;
inline constexpr int64_t kMaxOpset = 21;

// `--dim name=value`: symbolic dims (ONNX dim_param) pinned by the user.
using DimPins = std::map<std::string, int64_t>;

// `--dim-range name=min:max`: the range of a symbolic dim left dynamic.
struct DimRange {
  int64_t min = 1;
  int64_t max = 65536;
};
using DimRanges = std::map<std::string, DimRange>;

// An input read as `times` copies of its value stacked along one dim (counted from the last, 1
// = last): what GQA's folded rows read of a mask broadcast over the query heads
// (repeated_heads.h), and a batch's rows of a table broadcast over the batch (row_merge.h). The
// binding makes the copies; the program sees one input.
struct Tiling {
  int dimFromEnd = 0;
  int64_t times = 1;
};

struct Value {
  std::string name;
  std::string elemType;               // ONNX's name: "float16", "int64", ...
  std::optional<graph::DType> dtype;  // set for f16, bf16 and f32
  std::optional<graph::Dims> shape;   // static shape (rank 0 for scalars)
  std::string whyNoShape;             // when shape is unset: "dim 1 has no static size", ...
  bool initializer = false;
  bool graphInput = false;
  // Per dim of `shape`, the name of the dynamic dim it is (its extent the range's max), or
  // "" where static; empty when every dim is static.
  std::vector<std::string> dynamicDims;
  // How the framework stores the value where it is not row-major (graph JSON's "layout": an
  // FX value of logical [.., h, s, d] laid out [.., s, h, d], as SDPA returns its result): a
  // subgraph that writes the value stores it so, and no copy follows. Row-major in ONNX.
  graph::Layout storedLayout = graph::Layout::RowMajor;
  // False where the framework's storage of the value has gaps (graph JSON's "dense": false: a
  // column slice of a fused projection, rows further apart than a row's size): a subgraph
  // reading it is handed a dense copy. Always true in ONNX.
  bool dense = true;
  // Where the IR reads the value with its leading dims merged into one (row_merge.h), how many
  // last dims it keeps: 1, a batch of sequences [b, s, h] as rows [b·s, h]; 2, a batch of
  // heads [b, h, s, d] as matrices [b·h, s, d]. 0: as it is (stripDims). The shape stays the
  // model's.
  int keptDims = 0;
  // Where a subgraph reads the value as the rows of a batch it is broadcast over (row_merge.h:
  // a position table [1, s, h] added to [b, s, h] read as [b·s, h]): stacked `times` along a
  // dim, before keptDims merges. Times 1: as it is.
  Tiling tiling{};
};

// A constant small enough to be read by the mapping (a scalar, axes, a target shape).
struct Constant {
  graph::Dims shape;
  std::vector<double> values;  // row-major
};

struct Attribute {
  std::optional<int64_t> i;
  std::optional<double> f;
  std::vector<int64_t> ints;
  std::optional<Constant> tensor;  // a small tensor attribute's values
  std::optional<std::string> s;    // a string attribute (Gelu's approximate)
};

struct Node {
  std::string name;  // the node's name, or "<op>_<index>" where the file has none
  std::string op;
  std::string domain;               // "" for the default (ai.onnx) domain
  std::vector<std::string> inputs;  // "" for an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attributes;
  // The node this one is part of the body of (function_ops.h: a LayerNormalization written
  // out as primitive ops) and its op, or "" for a node of the file.
  std::string origin;
  std::string originOp;

  int64_t intAttr(const std::string& key, int64_t fallback) const;
  std::optional<std::vector<int64_t>> intsAttr(const std::string& key) const;
  double floatAttr(const std::string& key, double fallback) const;
  std::string stringAttr(const std::string& key, const std::string& fallback) const;
};

struct Model {
  std::string path;
  int64_t opset = 0;
  std::vector<Node> nodes;  // topological, as ONNX requires
  std::map<std::string, Value> values;
  std::map<std::string, Constant> constants;  // initializers and Constant nodes, small ones
  // Boolean and integer initializers and Constant nodes too large for `constants`, up to what
  // the constant evaluation reads (constant_eval.h): the operands of a mask the graph computes.
  std::map<std::string, Constant> maskOperands;
  std::set<std::string> folded;  // constants computed from others (model_shapes.cpp)
  // Initializers and Constant nodes whose values are a causal mask, of any size
  // (causal_pattern.h; small ones are also in `constants`).
  std::map<std::string, CausalPattern> causalConstants;
  std::vector<std::string> graphInputs;  // in order, initializers excluded
  std::vector<std::string> graphOutputs;
  std::string graphName;
  std::map<std::string, int> producers;  // value -> the node computing it
  // The symbolic dims left dynamic, in order of first appearance (graph inputs first).
  std::vector<graph::DynamicDim> dims;

  int producerOf(const std::string& value) const;  // -1 for inputs, initializers, unknown
};

// Throws UserError(path, reason) for anything the file gets wrong.
Model loadModel(const std::string& path, const DimPins& pins, const DimRanges& ranges = {});

// Whether a file should be read as an ONNX model (its extension).
bool isOnnxPath(const std::string& path);

// "name=value" from `--dim`; throws UserError("--dim", reason).
std::pair<std::string, int64_t> parseDimPin(const std::string& text);
// "name=min:max" from `--dim-range`; throws UserError("--dim-range", reason).
std::pair<std::string, DimRange> parseDimRange(const std::string& text);

}  // namespace mugraph::onnx_import
