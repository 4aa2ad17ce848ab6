// Schedules of memory-bound shapes shared by the plan tests (how they are planned) and the
// codegen tests (that the emitted code computes what the interpreter computes): a matmul of
// fewer rows than a tensor-core fragment, streaming its weight over a for-loop; a narrow one
// whose block has more warps than tensor-core blocks, so its warps split K.
#pragma once

#include <string>

#include "graph/builder.h"
#include "graph/validate.h"

namespace mugraph::plan::testing {

// Y = X·W with X [rows, 256] and W [256, 512] of `dtype`: 8 blocks of 64 output columns, a
// for-loop of 4 steps over K (64 at a time), the sum accumulated across it.
inline graph::Schedule smallRowMatmul(int64_t rows, graph::DType dtype) {
  using graph::OpKind;
  graph::GraphBuilder program("matmul_rows" + std::to_string(rows));
  const graph::TensorId x = program.input("X", dtype, {rows, 256});
  const graph::TensorId w = program.input("W", dtype, {256, 512});
  program.output(program.op(OpKind::Matmul, {x, w}, {}, "Y"));
  graph::Schedule schedule;
  schedule.name =
      "matmul_rows" + std::to_string(rows) + ".streamed." + std::string(graph::dtypeName(dtype));
  schedule.program = program.finish();
  graph::BlockGraphBuilder block({8, 1, 1}, 128, 4,
                                 {schedule.program.tensors[0], schedule.program.tensors[1]});
  const graph::TensorId xt = block.input(0, {-1, -1, -1}, 1, "x");
  const graph::TensorId wt = block.input(1, {1, -1, -1}, 0, "w");
  const graph::TensorId y = block.op(OpKind::Matmul, {xt, wt}, {}, "y");
  block.output(block.op(OpKind::AccumSum, {y}, {}, "y_acc"), {1, -1, -1});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  graph.output(graph.blockGraph("streamed", block.block(), {0, 1}, {{"Y", dtype}})[0]);
  schedule.graph = graph.finish();
  graph::validateSchedule(schedule);
  return schedule;
}

// Y = X·W with X [rows, 512] and W [512, 64] (stored transposed, as a linear layer's weight)
// of `dtype`: 4 blocks of 16 output columns, one 16 x 16 tensor-core block per block, 256
// threads, so the plan splits K across its 8 warps (MmaPlan::warpsK). With `forloop` 2 the
// sum is accumulated in registers across the loop (K 256 a step) and the warps' sums meet at
// the store; with 1 the product is reduced right after the multiply.
inline graph::Schedule narrowMatmul(int64_t rows, graph::DType dtype, int64_t forloop) {
  using graph::OpKind;
  graph::GraphBuilder program("matmul_narrow" + std::to_string(rows));
  const graph::TensorId x = program.input("X", dtype, {rows, 512});
  const graph::TensorId w = program.input("W", dtype, {512, 64}, graph::Layout::Transposed);
  program.output(program.op(OpKind::Matmul, {x, w}, {}, "Y"));
  graph::Schedule schedule;
  schedule.name = "matmul_narrow" + std::to_string(rows) + ".split" + std::to_string(forloop) +
                  "." + std::string(graph::dtypeName(dtype));
  schedule.program = program.finish();
  graph::BlockGraphBuilder block({4, 1, 1}, 256, forloop,
                                 {schedule.program.tensors[0], schedule.program.tensors[1]});
  const int loopDim = forloop > 1 ? 1 : -1;
  const graph::TensorId xt = block.input(0, {-1, -1, -1}, loopDim, "x");
  const graph::TensorId wt = block.input(1, {1, -1, -1}, forloop > 1 ? 0 : -1, "w");
  graph::TensorId y = block.op(OpKind::Matmul, {xt, wt}, {}, "y");
  if (forloop > 1) y = block.op(OpKind::AccumSum, {y}, {}, "y_acc");
  block.output(y, {1, -1, -1});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  graph.output(graph.blockGraph("narrow", block.block(), {0, 1}, {{"Y", dtype}})[0]);
  schedule.graph = graph.finish();
  graph::validateSchedule(schedule);
  return schedule;
}

}  // namespace mugraph::plan::testing
