// Schedules of row-wise memory-bound kernels shared by the plan tests (that they take the
// row-owned path, plan/paths/row_owned_plan.h) and the codegen tests (that the emitted code
// computes what the interpreter computes): a residual add, RMSNorm and a row sum over rows of a
// hidden size, and RoPE of a GQA layer's query and key heads in one kernel.
#pragma once

#include <string>

#include "graph/builder.h"
#include "graph/validate.h"

namespace mugraph::plan::testing {

// H = X + R, Y = W · rms_norm(H), S = reduce_sum(H) over rows of `hidden` (64 rows, f16): a
// block per `rowsPerBlock` rows, 128 threads (4 warps), W broadcast to every row.
inline graph::Schedule residualRmsNorm(int64_t hidden, int64_t rowsPerBlock) {
  using graph::DType;
  using graph::OpKind;
  graph::OpAttrs rowDim;
  rowDim.dim = 1;
  graph::GraphBuilder program("residual_rms_norm_" + std::to_string(hidden));
  const graph::TensorId x = program.input("X", DType::F16, {64, hidden});
  const graph::TensorId r = program.input("R", DType::F16, {64, hidden});
  const graph::TensorId w = program.input("W", DType::F16, {1, hidden});
  const graph::TensorId h = program.op(OpKind::Add, {x, r}, {}, "H");
  program.output(h);
  program.output(program.op(OpKind::Mul, {w, program.op(OpKind::RmsNorm, {h}, rowDim)}, {}, "Y"));
  program.output(program.op(OpKind::ReduceSum, {h}, rowDim, "S"));
  graph::Schedule schedule;
  schedule.name = "residual_rms_norm_" + std::to_string(hidden) + ".rows";
  schedule.program = program.finish();
  const std::vector<graph::TensorDesc> inputs(schedule.program.tensors.begin(),
                                              schedule.program.tensors.begin() + 3);
  graph::BlockGraphBuilder block({64 / rowsPerBlock, 1, 1}, 128, 1, inputs);
  const int rowDimOfX = rowsPerBlock < 64 ? 0 : -1;  // grid x walks the rows, if more than one
  const graph::TensorId xt = block.input(0, {rowDimOfX, -1, -1}, -1, "x");
  const graph::TensorId rt = block.input(1, {rowDimOfX, -1, -1}, -1, "r");
  const graph::TensorId wt = block.input(2, {-1, -1, -1}, -1, "w");
  const graph::TensorId ht = block.op(OpKind::Add, {xt, rt}, {}, "h");
  block.output(ht, {rowDimOfX, -1, -1});
  block.output(block.op(OpKind::Mul, {wt, block.op(OpKind::RmsNorm, {ht}, rowDim, "n")}, {}, "y"),
               {rowDimOfX, -1, -1});
  block.output(block.op(OpKind::ReduceSum, {ht}, rowDim, "s"), {rowDimOfX, -1, -1});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  for (graph::TensorId out :
       graph.blockGraph("rows", block.block(), {0, 1, 2},
                        {{"H", DType::F16}, {"Y", DType::F16}, {"S", DType::F16}})) {
    graph.output(out);
  }
  schedule.graph = graph.finish();
  graph::validateSchedule(schedule);
  return schedule;
}

// RoPE of 8 query heads and 2 KV heads of `headDim` over 16 tokens, stored [token, head, dim]
// (heads_transposed, as a linear layer's output viewed per head): Q·cos + rotate_half(Q)·sin
// and the same for K, one block per token (64 threads, 2 warps) holding every head, so K's
// tiles have fewer rows than Q's. `rotation` rotate_pairs is interleaved RoPE's (GPT-J).
inline graph::Schedule gqaRope(int64_t headDim,
                               graph::OpKind rotation = graph::OpKind::RotateHalf) {
  using graph::DType;
  using graph::OpKind;
  graph::OpAttrs lastDim;
  lastDim.dim = 2;
  const std::string name =
      std::string(rotation == graph::OpKind::RotatePairs ? "gqa_rope_pairs_d" : "gqa_rope_d") +
      std::to_string(headDim);
  graph::GraphBuilder program(name);
  const graph::Layout heads = graph::Layout::HeadsTransposed;
  const graph::TensorId q = program.input("Q", DType::F16, {8, 16, headDim}, heads);
  const graph::TensorId c = program.input("C", DType::F16, {1, 16, headDim});
  const graph::TensorId s = program.input("S", DType::F16, {1, 16, headDim});
  const graph::TensorId k = program.input("K", DType::F16, {2, 16, headDim}, heads);
  for (const auto& [x, name] : {std::pair{q, "QR"}, std::pair{k, "KR"}}) {
    const graph::TensorId rotated = program.op(rotation, {x}, lastDim);
    program.output(program.op(
        OpKind::Add, {program.op(OpKind::Mul, {x, c}), program.op(OpKind::Mul, {rotated, s})}, {},
        name));
  }
  graph::Schedule schedule;
  schedule.name = name + ".rows";
  schedule.program = program.finish();
  const std::vector<graph::TensorDesc> inputs(schedule.program.tensors.begin(),
                                              schedule.program.tensors.begin() + 4);
  graph::BlockGraphBuilder block({16, 1, 1}, 64, 1, inputs);
  const graph::TensorId qt = block.input(0, {1, -1, -1}, -1, "q");
  const graph::TensorId ct = block.input(1, {1, -1, -1}, -1, "c");
  const graph::TensorId st = block.input(2, {1, -1, -1}, -1, "s");
  const graph::TensorId kt = block.input(3, {1, -1, -1}, -1, "k");
  for (graph::TensorId x : {qt, kt}) {
    const graph::TensorId rotated = block.op(rotation, {x}, lastDim);
    block.output(block.op(OpKind::Add,
                          {block.op(OpKind::Mul, {x, ct}), block.op(OpKind::Mul, {rotated, st})}),
                 {1, -1, -1});
  }
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  for (graph::TensorId out : graph.blockGraph("rope", block.block(), {0, 1, 2, 3},
                                              {{"QR", DType::F16}, {"KR", DType::F16}})) {
    graph.output(out);
  }
  schedule.graph = graph.finish();
  graph::validateSchedule(schedule);
  return schedule;
}

}  // namespace mugraph::plan::testing
