// Causal safe attention (causal_mask on the scores, graph/ops.h) and a hand-built one-pass
// schedule of it, with the mistakes a schedule writer makes in the mask, for the verifier's
// and the emitters' tests.
#pragma once

#include "tests/verify/safe_attention.h"

namespace mugraph::verify::testing {

enum class MaskMistake {
  None,
  NoMask,        // the schedule forgets the mask
  WrongQueries,  // the schedule's mask repeats every half of the rows
};

inline graph::OpAttrs maskAttrs(int64_t queries) {
  graph::OpAttrs attrs;
  attrs.queries = queries;
  return attrs;
}

// O = softmax(causal_mask(Q·K)) V, safe: Q [B, R, D], K [B, D, S], V [B, S, D]. `queries`
// rows per sequence (0: all R), as causal_mask takes it.
inline graph::Program causalAttentionProgram(int64_t batch, int64_t rows, int64_t dim, int64_t seq,
                                             int64_t queries = 0,
                                             graph::DType dtype = graph::DType::F32) {
  return attentionProgram("causal_attention", batch, rows, dim, seq, dtype, queries);
}

// One kernel: grid (batch, rowParts), each block a part of the query rows, the for-loop over
// `forloop` tiles of the keys with the mask on each score tile, running max and rescaled sums.
inline graph::KernelGraph causalOnlineSchedule(const graph::Program& program, int64_t forloop,
                                               int64_t rowParts, int64_t queries,
                                               MaskMistake mistake = MaskMistake::None) {
  using graph::OpKind;
  constexpr int kNone = graph::kReplicated;
  auto b = graph::GraphBuilder::withInputsOf(program, "causal_online");
  graph::BlockGraphBuilder block({b.desc(0).shape[0], rowParts, 1}, 128, forloop,
                                 {b.desc(0), b.desc(1), b.desc(2)});
  const int rowAxis = rowParts > 1 ? 1 : kNone;
  const auto q = block.input(0, {0, rowAxis, kNone}, kNone, "q");
  const auto k = block.input(1, {0, kNone, kNone}, 2, "k");
  const auto v = block.input(2, {0, kNone, kNone}, 1, "v");
  graph::TensorId a = block.op(OpKind::Matmul, {q, k}, {}, "scores");
  if (mistake != MaskMistake::NoMask) {
    const int64_t rows = b.desc(0).shape[1];
    const int64_t written = mistake == MaskMistake::WrongQueries ? rows / 2 : queries;
    a = block.op(OpKind::CausalMask, {a}, maskAttrs(written), "a");
  }
  const auto tileMax = block.op(OpKind::ReduceMax, {a}, reduceAttrs(2), "tile_max");
  const auto m = block.op(OpKind::AccumMax, {tileMax}, {}, "m");
  const auto e = block.op(OpKind::Exp, {block.op(OpKind::Sub, {a, m}, {}, "shifted")}, {}, "e");
  const auto l = block.op(OpKind::AccumRescaledSum,
                          {block.op(OpKind::ReduceSum, {e}, reduceAttrs(2), "tile_l"), m}, {}, "l");
  const auto o =
      block.op(OpKind::AccumRescaledSum, {block.op(OpKind::Matmul, {e, v}, {}, "ev"), m}, {}, "o");
  block.output(block.op(OpKind::Div, {o, l}, {}, "out"), {0, rowAxis == kNone ? kNone : 1, kNone});
  b.output(b.blockGraph("causal_online", block.block(), {0, 1, 2}, {{"O", b.desc(0).dtype}})[0]);
  return b.finish();
}

}  // namespace mugraph::verify::testing
