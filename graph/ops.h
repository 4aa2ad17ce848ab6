// The op vocabulary of the µgraph IR, in one table: each op's name on disk, its arity, its
// attributes and the levels (kernel graph, block graph) where it may appear. Parsers,
// validation, the interpreter and the code generator all read this table.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace mugraph::graph {

enum class OpKind {
  Input,
  Output,
  Matmul,
  Exp,
  Square,
  Sqrt,
  Silu,
  Sigmoid,
  Scale,
  AddScalar,
  Add,
  Sub,
  Mul,
  Div,
  ReduceSum,
  ReduceMax,
  RmsNorm,
  AccumSum,
  AccumMax,
  AccumRescaledSum,
  BlockGraph,
  RotateHalf,
  CausalMask,  // the kinds before it keep their numbers; later ones follow it
  Tanh,
  Erf,
  RotatePairs,
  Relu,
};

enum class OpClass { Io, Matmul, Unary, Binary, Reduction, Accumulator, BlockGraph };

struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpClass opClass;
  int arity;         // number of tensor operands (-1: any, for block graphs)
  bool hasDim;       // takes dim=
  bool hasTo;        // takes to= (reduce_sum only)
  bool hasScale;     // takes c= (scale, add_scalar)
  bool kernelLevel;  // may appear in a kernel graph (program or schedule)
  bool blockLevel;   // may appear inside a block graph
  // No algebraic meaning in the finite field: fingerprints map each value through a per-trial
  // random function (verify/README.md). An op of this kind (sigmoid, ...) needs only this flag
  // and its real definition (verify/number_domain.h); the field needs nothing more.
  bool uninterpreted;
  bool hasQueries;  // takes queries= (causal_mask only)
};

const OpInfo& opInfo(OpKind kind);
const std::vector<OpInfo>& allOps();
std::optional<OpKind> parseOpKind(std::string_view name);
inline std::string_view opName(OpKind kind) {
  return opInfo(kind).name;
}

inline bool isElementwise(OpKind kind) {
  OpClass c = opInfo(kind).opClass;
  return c == OpClass::Unary || c == OpClass::Binary;
}
inline bool isAccumulator(OpKind kind) {
  return opInfo(kind).opClass == OpClass::Accumulator;
}
// RoPE's two rotations of a row along `dim`, signed lane permutations of an even row:
// rotate_half (Llama, NeoX) pairs lane j with j ± n/2, y = cat(-x[n/2:], x[:n/2]);
// rotate_pairs (GPT-J, Cohere, CodeGen, GLM: the interleaved form) pairs lane 2i with 2i+1,
// y[2i] = -x[2i+1], y[2i+1] = x[2i].
inline bool isRotation(OpKind kind) {
  return kind == OpKind::RotateHalf || kind == OpKind::RotatePairs;
}
// The ops of class Reduction that keep their operand's shape: each output element depends on
// its whole row along `dim` (rms_norm normalizes it, the rotations permute it with signs).
inline bool keepsShape(OpKind kind) {
  return kind == OpKind::RmsNorm || isRotation(kind);
}
// causal_mask(x, queries=q) keeps the elements of x at or below the causal diagonal of its
// last two dims and sets the others to -inf. Row r of the whole (kernel-level) tensor is query
// r mod q of a sequence of q queries (q = 0: the whole row dim; q < rows holds several
// sequences, as a GQA program folding its query heads into the rows does) and sees the key
// columns up to its position aligned to the end of the keys: column c of `cols` is kept iff
// c <= r mod q + (cols - q) (bottom-right alignment, what a query block at the end of a longer
// KV cache needs). Inside a block graph, r and c are the tile's positions in the device
// tensor (graph/tile_splits.h), so a tile entirely above the diagonal is all -inf and adds
// nothing to a safe softmax: the code generator skips it.
inline bool causallyKept(int64_t row, int64_t col, int64_t rows, int64_t cols, int64_t queries) {
  const int64_t q = queries > 0 ? queries : rows;
  return col <= row % q + (cols - q);
}

inline bool isCommutative(OpKind kind) {
  return kind == OpKind::Add || kind == OpKind::Mul;
}

// Attributes of an op; which ones are meaningful is given by OpInfo.
struct OpAttrs {
  int dim = -1;         // reductions, rms_norm, rotate_half, rotate_pairs
  int64_t to = 1;       // reduce_sum: size of the reduced dim after the op
  double scale = 1.0;   // scale, add_scalar: the constant c
  int64_t queries = 0;  // causal_mask: query rows per sequence (0: the whole row dim)

  bool operator==(const OpAttrs&) const = default;
};

}  // namespace mugraph::graph
