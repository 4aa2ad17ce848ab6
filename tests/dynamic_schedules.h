// Dynamic programs and their hand-built schedules for the tests of dynamic dims (issue 28): a
// GEMM whose rows m are dynamic and cut by the grid with a declared tile, and a safe attention
// whose key length s is dynamic and cut by the for-loop with a declared tile, with the mistake
// of accumulating the output without rescaling (right while the loop has one iteration); and
// the same attention split over a fixed number of key parts (split-KV) with a rescaling combine,
// whose trips follow the length and whose last parts are empty at short lengths, with the
// mistake of combining the parts without rescaling (right while one part holds keys).
// schedules/dynamic/ ships the programs and these schedules; the tests check they match.
#pragma once

#include <string>

#include "graph/builder.h"
#include "graph/program_text.h"

namespace mugraph::testing {

inline constexpr const char* kDynamicGemmText = R"(program gemm_dynamic_m
dim m in [1, 4096]
input A f16 [m, 128]
input B f16 [128, 64]
C = matmul(A, B)
output C
)";

// A GQA-shaped decode (4 KV heads, 4 query rows each) over a long key range: one block per head
// leaves the multiprocessors idle, so split-KV wins the long lengths.
inline constexpr const char* kDynamicDecodeText = R"(program decode_dynamic
dim s in [1, 16384]
input Q f16 [4, 4, 64]
input K f16 [4, 64, s] layout=transposed
input V f16 [4, s, 64]
A = scale(matmul(Q, K), c=0.125)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
)";

inline constexpr const char* kDynamicAttentionText = R"(program attention_dynamic_kv
dim s in [1, 2048]
input Q f16 [2, 16, 32]
input K f16 [2, 32, s]
input V f16 [2, s, 32]
A = matmul(Q, K)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
L = reduce_sum(E, dim=2)
O = div(matmul(E, V), L)
output O
)";

inline constexpr int64_t kSplitKvParts = 4;
inline constexpr int64_t kGemmRowTile = 128;
inline constexpr int64_t kAttentionKvTile = 64;
inline constexpr int64_t kDynamicGemmMax = 4096;
inline constexpr int64_t kDynamicAttentionMax = 2048;

// `text` with its dim's range ending at `max` instead (the range's text is "[1, <default>]").
inline std::string withRangeMax(const char* text, int64_t defaultMax, int64_t max) {
  std::string changed = text;
  const std::string range = "[1, " + std::to_string(defaultMax) + "]";
  changed.replace(changed.find(range), range.size(), "[1, " + std::to_string(max) + "]");
  return changed;
}

// One kernel: grid (⌈m/128⌉, 1, 1), the loop over k in tiles of 64; A declares its tile. `max`:
// the range's end (the shipped schedule's by default).
inline graph::Schedule dynamicGemmSchedule(int64_t max = kDynamicGemmMax) {
  using graph::OpKind;
  constexpr int kNone = graph::kReplicated;
  const graph::Program program = graph::parseProgramText(
      withRangeMax(kDynamicGemmText, kDynamicGemmMax, max), "gemm_dynamic_m.mg");
  auto b = graph::GraphBuilder::withInputsOf(program, "gemm_dynamic_m.grid128");
  const int64_t m = program.dims.at(0).max;
  graph::BlockGraphBuilder block({(m + kGemmRowTile - 1) / kGemmRowTile, 1, 1}, 128, 2,
                                 {b.desc(0), b.desc(1)});
  const auto a = block.input(0, {0, kNone, kNone}, 1, "a", {kGemmRowTile, 64});
  const auto w = block.input(1, {kNone, kNone, kNone}, 0, "b");
  const auto c = block.op(OpKind::AccumSum, {block.op(OpKind::Matmul, {a, w}, {}, "ab")}, {}, "c");
  block.output(c, {0, kNone, kNone});
  b.output(b.blockGraph("gemm", block.block(), {0, 1}, {{"C", graph::DType::F16}})[0]);
  return graph::Schedule{"gemm_dynamic_m.grid128", program, b.finish()};
}

// One kernel per batch: the online-softmax loop over key tiles of 64 (FlashAttention); with
// `missingRescale` the output accumulates with accum_sum, which is right only while the loop
// has one iteration (s <= 64).
inline graph::Schedule dynamicAttentionSchedule(bool missingRescale = false,
                                                int64_t max = kDynamicAttentionMax) {
  using graph::OpKind;
  constexpr int kNone = graph::kReplicated;
  const graph::Program program = graph::parseProgramText(
      withRangeMax(kDynamicAttentionText, kDynamicAttentionMax, max), "attention_dynamic_kv.mg");
  const std::string name =
      std::string("attention_dynamic_kv.") + (missingRescale ? "missing_rescale" : "online64");
  auto b = graph::GraphBuilder::withInputsOf(program, name);
  const int64_t s = program.dims.at(0).max;
  const int64_t d = b.desc(0).shape[2];
  graph::BlockGraphBuilder block({b.desc(0).shape[0], 1, 1}, 128,
                                 (s + kAttentionKvTile - 1) / kAttentionKvTile,
                                 {b.desc(0), b.desc(1), b.desc(2)});
  graph::OpAttrs lastDim;
  lastDim.dim = 2;
  const auto q = block.input(0, {0, kNone, kNone}, kNone, "q");
  const auto k = block.input(1, {0, kNone, kNone}, 2, "k", {1, d, kAttentionKvTile});
  const auto v = block.input(2, {0, kNone, kNone}, 1, "v", {1, kAttentionKvTile, d});
  const auto a = block.op(OpKind::Matmul, {q, k}, {}, "a");
  const auto m =
      block.op(OpKind::AccumMax, {block.op(OpKind::ReduceMax, {a}, lastDim, "tile_max")}, {}, "m");
  const auto e = block.op(OpKind::Exp, {block.op(OpKind::Sub, {a, m}, {}, "shifted")}, {}, "e");
  const auto l = block.op(OpKind::AccumRescaledSum,
                          {block.op(OpKind::ReduceSum, {e}, lastDim, "tile_l"), m}, {}, "l");
  const auto ev = block.op(OpKind::Matmul, {e, v}, {}, "ev");
  const auto o = missingRescale ? block.op(OpKind::AccumSum, {ev}, {}, "o")
                                : block.op(OpKind::AccumRescaledSum, {ev, m}, {}, "o");
  block.output(block.op(OpKind::Div, {o, l}, {}, "out"), {0, kNone, kNone});
  b.output(b.blockGraph("attention", block.block(), {0, 1, 2}, {{"O", graph::DType::F16}})[0]);
  return graph::Schedule{name, program, b.finish()};
}

// Two kernels: split-KV over kSplitKvParts parts of the keys per batch (grid (2, 4, 1)), each
// part an online-softmax loop over tiles of 64 whose trips follow the length, writing the
// partial sums L_part and O_part and the partial maxima M_part; then a combine per batch that
// walks the parts, rescaling each by exp(m_j − m). With `missingRescale` the combine adds the
// parts' sums as they are, which is right only while one part holds keys (s <= 64 at one trip).
inline graph::Schedule dynamicSplitKvSchedule(bool missingRescale = false,
                                              int64_t max = kDynamicAttentionMax) {
  using graph::OpKind;
  constexpr int kNone = graph::kReplicated;
  const graph::Program program = graph::parseProgramText(
      withRangeMax(kDynamicAttentionText, kDynamicAttentionMax, max), "attention_dynamic_kv.mg");
  const std::string name = std::string("attention_dynamic_kv.") +
                           (missingRescale ? "split_missing_rescale" : "split4x64");
  auto b = graph::GraphBuilder::withInputsOf(program, name);
  const int64_t s = program.dims.at(0).max;
  const int64_t batch = b.desc(0).shape[0];
  const int64_t d = b.desc(0).shape[2];
  const int64_t trips =
      (s + kSplitKvParts * kAttentionKvTile - 1) / (kSplitKvParts * kAttentionKvTile);
  graph::OpAttrs lastDim;
  lastDim.dim = 2;
  graph::BlockGraphBuilder split({batch, kSplitKvParts, 1}, 128, trips,
                                 {b.desc(0), b.desc(1), b.desc(2)});
  const auto q = split.input(0, {0, kNone, kNone}, kNone, "q");
  const auto k = split.input(1, {0, 2, kNone}, 2, "k", {1, d, kAttentionKvTile});
  const auto v = split.input(2, {0, 1, kNone}, 1, "v", {1, kAttentionKvTile, d});
  const auto a = split.op(OpKind::Matmul, {q, k}, {}, "a");
  const auto m =
      split.op(OpKind::AccumMax, {split.op(OpKind::ReduceMax, {a}, lastDim, "tile_max")}, {}, "m");
  const auto e = split.op(OpKind::Exp, {split.op(OpKind::Sub, {a, m}, {}, "shifted")}, {}, "e");
  const auto l = split.op(OpKind::AccumRescaledSum,
                          {split.op(OpKind::ReduceSum, {e}, lastDim, "tile_l"), m}, {}, "l");
  const auto o = split.op(OpKind::AccumRescaledSum,
                          {split.op(OpKind::Matmul, {e, v}, {}, "ev"), m}, {}, "o");
  split.output(l, {0, 2, kNone});
  split.output(o, {0, 2, kNone});
  split.output(m, {0, 2, kNone});
  const std::vector<graph::TensorId> parts =
      b.blockGraph("split_kv", split.block(), {0, 1, 2},
                   {{"L_part", graph::DType::F32},
                    {"O_part", graph::DType::F32},
                    {"M_part", graph::DType::F32}});
  graph::BlockGraphBuilder combine({batch, 1, 1}, 128, kSplitKvParts,
                                   {b.desc(parts[0]), b.desc(parts[1]), b.desc(parts[2])});
  const auto lj = combine.input(0, {0, kNone, kNone}, 2, "l_j");
  const auto oj = combine.input(1, {0, kNone, kNone}, 2, "o_j");
  const auto mj = combine.input(2, {0, kNone, kNone}, 2, "m_j");
  graph::TensorId total = -1, sum = -1;
  if (missingRescale) {
    total = combine.op(OpKind::AccumSum, {lj}, {}, "total");
    sum = combine.op(OpKind::AccumSum, {oj}, {}, "sum");
  } else {
    const auto running = combine.op(OpKind::AccumMax, {mj}, {}, "running");
    const auto factor =
        combine.op(OpKind::Exp, {combine.op(OpKind::Sub, {mj, running}, {}, "shift")}, {}, "factor");
    total = combine.op(OpKind::AccumRescaledSum,
                       {combine.op(OpKind::Mul, {lj, factor}, {}, "l_scaled"), running}, {}, "total");
    sum = combine.op(OpKind::AccumRescaledSum,
                     {combine.op(OpKind::Mul, {oj, factor}, {}, "o_scaled"), running}, {}, "sum");
  }
  combine.output(combine.op(OpKind::Div, {sum, total}, {}, "out"), {0, kNone, kNone});
  b.output(b.blockGraph("combine", combine.block(), {parts[0], parts[1], parts[2]},
                        {{"O", graph::DType::F16}})[0]);
  return graph::Schedule{name, program, b.finish()};
}

}  // namespace mugraph::testing
