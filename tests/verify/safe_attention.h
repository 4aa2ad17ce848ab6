// Safe (max-subtracting) attention and its hand-built schedules: one pass with online-softmax
// rescaling (FlashAttention), and split-KV partials combined by rescaling (FlashDecoding),
// each with the mistakes a schedule writer makes in them, for the verifier's tests.
#pragma once

#include <cmath>
#include <optional>
#include <random>
#include <string>

#include "graph/builder.h"
#include "verify/host_tensor.h"

namespace mugraph::verify::testing {

enum class RescaleMistake {
  None,
  MissingRescale,   // the output accumulates with accum_sum: earlier tiles keep a stale max
  TileMax,          // exp subtracts the tile's own max, the sums rescale by the running max
  UnscaledCombine,  // split partials summed without exp(m_j − m)
  WrongPartialMax,  // a split writes the sum of its tile maxes, not its running max
};

inline graph::OpAttrs reduceAttrs(int dim) {
  graph::OpAttrs attrs;
  attrs.dim = dim;
  return attrs;
}

// O = softmax(Q·K) V with the row max subtracted before exp. Q [B, R, D], K [B, D, S]
// (keys stored transposed), V [B, S, D], all of `dtype`.
// With `causalQueries`, the scores go through causal_mask(queries=*causalQueries) first.
inline graph::Program attentionProgram(const std::string& name, int64_t batch, int64_t rows,
                                       int64_t dim, int64_t seq, graph::DType dtype,
                                       std::optional<int64_t> causalQueries) {
  using graph::OpKind;
  graph::GraphBuilder b(name);
  const auto q = b.input("Q", dtype, {batch, rows, dim});
  const auto k = b.input("K", dtype, {batch, dim, seq});
  const auto v = b.input("V", dtype, {batch, seq, dim});
  graph::TensorId a = -1;
  if (causalQueries) {
    graph::OpAttrs mask;
    mask.queries = *causalQueries;
    a = b.op(OpKind::CausalMask, {b.op(OpKind::Matmul, {q, k}, {}, "scores")}, mask, "A");
  } else {
    a = b.op(OpKind::Matmul, {q, k}, {}, "A");
  }
  const auto m = b.op(OpKind::ReduceMax, {a}, reduceAttrs(2), "M");
  const auto e = b.op(OpKind::Exp, {b.op(OpKind::Sub, {a, m}, {}, "shifted")}, {}, "E");
  const auto l = b.op(OpKind::ReduceSum, {e}, reduceAttrs(2), "L");
  const auto o = b.op(OpKind::Matmul, {e, v}, {}, "unnormalized");
  b.output(b.op(OpKind::Div, {o, l}, {}, "O"));
  return b.finish();
}

inline graph::Program safeAttentionProgram(int64_t batch, int64_t rows, int64_t dim, int64_t seq,
                                           graph::DType dtype = graph::DType::F32) {
  return attentionProgram("safe_attention", batch, rows, dim, seq, dtype, std::nullopt);
}

// One kernel: grid (batch, 1), the for-loop over `forloop` tiles of the sequence, running max
// and rescaled sums, one division after the loop. With `kvTile`, K and V declare tiles of that
// many positions, so the last iteration may hold fewer (graph/tile_splits.h).
inline graph::KernelGraph onlineSoftmaxSchedule(const graph::Program& program, int64_t forloop,
                                                RescaleMistake mistake = RescaleMistake::None,
                                                int64_t kvTile = 0) {
  using graph::OpKind;
  constexpr int kNone = graph::kReplicated;
  auto b = graph::GraphBuilder::withInputsOf(program, "online");
  graph::BlockGraphBuilder block({b.desc(0).shape[0], 1, 1}, 128, forloop,
                                 {b.desc(0), b.desc(1), b.desc(2)});
  const int64_t dim = b.desc(0).shape[2];
  const graph::Dims kTile = kvTile > 0 ? graph::Dims{1, dim, kvTile} : graph::Dims{};
  const graph::Dims vTile = kvTile > 0 ? graph::Dims{1, kvTile, dim} : graph::Dims{};
  const auto q = block.input(0, {0, kNone, kNone}, kNone, "q");
  const auto k = block.input(1, {0, kNone, kNone}, 2, "k", kTile);
  const auto v = block.input(2, {0, kNone, kNone}, 1, "v", vTile);
  const auto a = block.op(OpKind::Matmul, {q, k}, {}, "a");
  const auto tileMax = block.op(OpKind::ReduceMax, {a}, reduceAttrs(2), "tile_max");
  const auto m = block.op(OpKind::AccumMax, {tileMax}, {}, "m");
  const auto shift = mistake == RescaleMistake::TileMax ? tileMax : m;
  const auto e = block.op(OpKind::Exp, {block.op(OpKind::Sub, {a, shift}, {}, "shifted")}, {}, "e");
  const auto l = block.op(OpKind::AccumRescaledSum,
                          {block.op(OpKind::ReduceSum, {e}, reduceAttrs(2), "tile_l"), m}, {}, "l");
  const auto ev = block.op(OpKind::Matmul, {e, v}, {}, "ev");
  const auto o = mistake == RescaleMistake::MissingRescale
                     ? block.op(OpKind::AccumSum, {ev}, {}, "o")
                     : block.op(OpKind::AccumRescaledSum, {ev, m}, {}, "o");
  block.output(block.op(OpKind::Div, {o, l}, {}, "out"), {0, kNone, kNone});
  b.output(b.blockGraph("online", block.block(), {0, 1, 2}, {{"O", b.desc(0).dtype}})[0]);
  return b.finish();
}

// Two kernels: `splits` blocks per batch each run the online loop over their part of the
// sequence and write unnormalized partials with their max (in f32 whatever the inputs, as
// FlashDecoding keeps them); the combine loops over the partials, rescaling each by
// exp(m_j − m).
// With `kvTile`, K and V declare tiles of that many positions (graph/tile_splits.h): a
// sequence of no whole number of them ends in a partial tile, and the last split may need
// fewer iterations than the loop has.
inline graph::KernelGraph splitKvSchedule(const graph::Program& program, int64_t splits,
                                          int64_t forloop,
                                          RescaleMistake mistake = RescaleMistake::None,
                                          int64_t kvTile = 0) {
  using graph::OpKind;
  constexpr int kNone = graph::kReplicated;
  auto b = graph::GraphBuilder::withInputsOf(program, "split_kv");
  const int64_t batch = b.desc(0).shape[0];
  graph::BlockGraphBuilder part({batch, splits, 1}, 128, forloop,
                                {b.desc(0), b.desc(1), b.desc(2)});
  const auto q = part.input(0, {0, kNone, kNone}, kNone, "q");
  const int64_t dim = b.desc(0).shape[2];
  const graph::Dims kTile = kvTile > 0 ? graph::Dims{1, dim, kvTile} : graph::Dims{};
  const graph::Dims vTile = kvTile > 0 ? graph::Dims{1, kvTile, dim} : graph::Dims{};
  const auto k = part.input(1, {0, 2, kNone}, 2, "k", kTile);
  const auto v = part.input(2, {0, 1, kNone}, 1, "v", vTile);
  const auto a = part.op(OpKind::Matmul, {q, k}, {}, "a");
  const auto tileMax = part.op(OpKind::ReduceMax, {a}, reduceAttrs(2), "tile_max");
  const auto m = part.op(OpKind::AccumMax, {tileMax}, {}, "m");
  const auto e = part.op(OpKind::Exp, {part.op(OpKind::Sub, {a, m}, {}, "shifted")}, {}, "e");
  const auto l = part.op(OpKind::AccumRescaledSum,
                         {part.op(OpKind::ReduceSum, {e}, reduceAttrs(2), "tile_l"), m}, {}, "l");
  const auto o =
      part.op(OpKind::AccumRescaledSum, {part.op(OpKind::Matmul, {e, v}, {}, "ev"), m}, {}, "o");
  // A post-loop value that is not the max its partials were computed with.
  const auto written = mistake == RescaleMistake::WrongPartialMax
                           ? part.op(OpKind::AccumSum, {tileMax}, {}, "sum_of_tile_maxes")
                           : m;
  part.output(o, {0, 2, kNone});
  part.output(l, {0, 2, kNone});
  part.output(written, {0, 2, kNone});
  const auto partials = b.blockGraph("partials", part.block(), {0, 1, 2},
                                     {{"O_part", graph::DType::F32},
                                      {"L_part", graph::DType::F32},
                                      {"M_part", graph::DType::F32}});
  graph::BlockGraphBuilder combine({batch, 1, 1}, 128, splits,
                                   {b.desc(partials[0]), b.desc(partials[1]), b.desc(partials[2])});
  const auto oj = combine.input(0, {0, kNone, kNone}, 2, "o_j");
  const auto lj = combine.input(1, {0, kNone, kNone}, 2, "l_j");
  const auto mj = combine.input(2, {0, kNone, kNone}, 2, "m_j");
  graph::TensorId out;
  if (mistake == RescaleMistake::UnscaledCombine) {
    out = combine.op(
        OpKind::Div,
        {combine.op(OpKind::AccumSum, {oj}, {}, "o"), combine.op(OpKind::AccumSum, {lj}, {}, "l")},
        {}, "out");
  } else {
    const auto mAll = combine.op(OpKind::AccumMax, {mj}, {}, "m");
    const auto f =
        combine.op(OpKind::Exp, {combine.op(OpKind::Sub, {mj, mAll}, {}, "dm")}, {}, "f");
    const auto o = combine.op(OpKind::AccumRescaledSum,
                              {combine.op(OpKind::Mul, {oj, f}, {}, "of"), mAll}, {}, "o");
    const auto l = combine.op(OpKind::AccumRescaledSum,
                              {combine.op(OpKind::Mul, {lj, f}, {}, "lf"), mAll}, {}, "l");
    out = combine.op(OpKind::Div, {o, l}, {}, "out");
  }
  combine.output(out, {0, kNone, kNone});
  b.output(b.blockGraph("combine", combine.block(), partials, {{"O", b.desc(0).dtype}})[0]);
  return b.finish();
}

// Inputs whose logits Q·K have standard deviation `logitStd`: Q ~ N(0, (logitStd²/D)), K and
// V ~ N(0, 1), the spread real models produce (up to 16 with QK-norm or attention sinks).
inline TensorMap<double> attentionInputs(const graph::Program& program, double logitStd,
                                         uint64_t seed) {
  std::mt19937_64 generator(seed);
  const double dim = static_cast<double>(program.tensors[program.inputs[0]].shape.back());
  TensorMap<double> inputs;
  for (graph::TensorId id : program.inputs) {
    const graph::TensorDesc& desc = program.tensors[id];
    std::normal_distribution<double> normal(0.0,
                                            desc.name == "Q" ? logitStd / std::sqrt(dim) : 1.0);
    HostTensor<double> tensor{desc.shape, {}};
    tensor.data.resize(static_cast<size_t>(graph::elementCount(desc.shape)));
    for (double& x : tensor.data) x = normal(generator);
    inputs[desc.name] = std::move(tensor);
  }
  return inputs;
}

}  // namespace mugraph::verify::testing
