// Schedules of memory-bound shapes shared by the plan tests (how they are planned) and the
// codegen tests (that the emitted code computes what the interpreter computes): a matmul of
// fewer rows than a tensor-core fragment, streaming its weight over a for-loop.
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

}  // namespace mugraph::plan::testing
