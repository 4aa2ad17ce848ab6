#include "graph/ops.h"

namespace mugraph::graph {
namespace {

// clang-format off
const std::vector<OpInfo> kOps = {
  //  kind               name          class                 arity dim   to     c      kernel block  uninterpreted queries
  {OpKind::Input,      "input",      OpClass::Io,          0,  false, false, false, true,  true,  false, false},
  {OpKind::Output,     "output",     OpClass::Io,          1,  false, false, false, true,  true,  false, false},
  {OpKind::Matmul,     "matmul",     OpClass::Matmul,      2,  false, false, false, true,  true,  false, false},
  {OpKind::Exp,        "exp",        OpClass::Unary,       1,  false, false, false, true,  true,  false, false},
  {OpKind::Square,     "square",     OpClass::Unary,       1,  false, false, false, true,  true,  false, false},
  {OpKind::Sqrt,       "sqrt",       OpClass::Unary,       1,  false, false, false, true,  true,  true, false},
  {OpKind::Silu,       "silu",       OpClass::Unary,       1,  false, false, false, true,  true,  true, false},
  {OpKind::Sigmoid,    "sigmoid",    OpClass::Unary,       1,  false, false, false, true,  true,  true, false},
  {OpKind::Scale,      "scale",      OpClass::Unary,       1,  false, false, true,  true,  true,  false, false},
  {OpKind::AddScalar,  "add_scalar", OpClass::Unary,       1,  false, false, true,  true,  true,  false, false},
  {OpKind::Add,        "add",        OpClass::Binary,      2,  false, false, false, true,  true,  false, false},
  {OpKind::Sub,        "sub",        OpClass::Binary,      2,  false, false, false, true,  true,  false, false},
  {OpKind::Mul,        "mul",        OpClass::Binary,      2,  false, false, false, true,  true,  false, false},
  {OpKind::Div,        "div",        OpClass::Binary,      2,  false, false, false, true,  true,  false, false},
  {OpKind::ReduceSum,  "reduce_sum", OpClass::Reduction,   1,  true,  true,  false, true,  true,  false, false},
  {OpKind::ReduceMax,  "reduce_max", OpClass::Reduction,   1,  true,  false, false, true,  true,  false, false},
  {OpKind::RmsNorm,    "rms_norm",   OpClass::Reduction,   1,  true,  false, false, true,  true,  false, false},
  {OpKind::AccumSum,   "accum_sum",  OpClass::Accumulator, 1,  false, false, false, false, true,  false, false},
  {OpKind::AccumMax,   "accum_max",  OpClass::Accumulator, 1,  false, false, false, false, true,  false, false},
  {OpKind::AccumRescaledSum, "accum_rescaled_sum", OpClass::Accumulator, 2, false, false, false, false, true, false, false},
  {OpKind::BlockGraph, "block_graph",OpClass::BlockGraph,  -1, false, false, false, true,  false, false, false},
  {OpKind::RotateHalf, "rotate_half",OpClass::Reduction,   1,  true,  false, false, true,  true,  false, false},
  {OpKind::CausalMask, "causal_mask",OpClass::Unary,       1,  false, false, false, true,  true,  false, true},
  {OpKind::Tanh,       "tanh",       OpClass::Unary,       1,  false, false, false, true,  true,  true, false},
  {OpKind::Erf,        "erf",        OpClass::Unary,       1,  false, false, false, true,  true,  true, false},
  {OpKind::RotatePairs,"rotate_pairs",OpClass::Reduction,  1,  true,  false, false, true,  true,  false, false},
  {OpKind::Relu,       "relu",       OpClass::Unary,       1,  false, false, false, true,  true,  true, false},
};
// clang-format on

}  // namespace

const std::vector<OpInfo>& allOps() {
  return kOps;
}

const OpInfo& opInfo(OpKind kind) {
  return kOps[static_cast<size_t>(kind)];
}

std::optional<OpKind> parseOpKind(std::string_view name) {
  for (const OpInfo& info : kOps) {
    if (info.name == name) return info.kind;
  }
  return std::nullopt;
}

}  // namespace mugraph::graph
