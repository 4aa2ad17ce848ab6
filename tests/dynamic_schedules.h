// Dynamic programs and their hand-built schedules for the tests of dynamic dims (issue 28): a
// GEMM whose rows m are dynamic and cut by the grid with a declared tile, and a safe attention
// whose key length s is dynamic and cut by the for-loop with a declared tile, with the mistake
// of accumulating the output without rescaling (right while the loop has one iteration).
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

}  // namespace mugraph::testing
