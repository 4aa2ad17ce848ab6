// Block graphs with rescaling accumulators that pin the plan's rules for them, shared by the
// plan tests (how they are planned) and the codegen tests (that the emitted code computes what
// the interpreter computes): tests/verify/safe_attention.h's attention schedules as
// schedules, tensor-core accumulators rescaled by maxes that vary along columns (one updated
// by a row reduction, one in a matmul's epilogue), and a rescaled sum whose input is computed
// before its max is updated.
#pragma once

#include <string>

#include "graph/builder.h"
#include "graph/validate.h"
#include "tests/verify/safe_attention.h"

namespace mugraph::plan::testing {

// Safe attention with Q [2, 64, 64], K [2, 64, 256], V [2, 256, 64] of `dtype`: in f16 the
// tiles of both matmuls are tensor-core sized.
inline graph::Program attentionProgram(graph::DType dtype) {
  return verify::testing::safeAttentionProgram(2, 64, 64, 256, dtype);
}

inline graph::Schedule scheduleOf(const graph::Program& program, const graph::KernelGraph& graph) {
  graph::Schedule schedule;
  schedule.name = program.name + "." + graph.name + "." +
                  std::string(graph::dtypeName(program.tensors[program.inputs[0]].dtype));
  schedule.program = program;
  schedule.graph = graph;
  graph::validateSchedule(schedule);
  return schedule;
}

// The one-kernel online softmax, four KV tiles.
inline graph::Schedule onlineAttention(graph::DType dtype) {
  const graph::Program program = attentionProgram(dtype);
  return scheduleOf(program, verify::testing::onlineSoftmaxSchedule(program, 4));
}

// Four KV splits of two tiles each, then the combine.
inline graph::Schedule splitKvAttention(graph::DType dtype) {
  const graph::Program program = attentionProgram(dtype);
  return scheduleOf(program, verify::testing::splitKvSchedule(program, 4, 2));
}

// f16, forloop 4: a = P·K_i, m = running max of a's columns ([1, 64]), O accumulates
// W·exp(a − m) rescaled by m on tensor cores, so the factor of a fragment depends on its
// column. The program only shares the interface (the interpreter runs the schedule's graph).
inline graph::Schedule columnMaxRescaleSchedule() {
  using graph::DType;
  using graph::OpKind;
  graph::OpAttrs columns;
  columns.dim = 0;
  graph::OpAttrs toTile;
  toTile.dim = 1;
  toTile.to = 64;
  graph::GraphBuilder program("column_max_rescale");
  const graph::TensorId p = program.input("P", DType::F16, {64, 64});
  const graph::TensorId k = program.input("K", DType::F16, {64, 256});
  const graph::TensorId w = program.input("W", DType::F16, {64, 64});
  program.output(program.op(
      OpKind::Add, {program.op(OpKind::Matmul, {w, p}), program.op(OpKind::ReduceSum, {k}, toTile)},
      {}, "O"));
  graph::Schedule schedule;
  schedule.name = "column_max_rescale.block";
  schedule.program = program.finish();

  const std::vector<graph::TensorDesc> inputs(schedule.program.tensors.begin(),
                                              schedule.program.tensors.begin() + 3);
  graph::BlockGraphBuilder block({1, 1, 1}, 128, 4, inputs);
  const graph::TensorId pt = block.input(0, {-1, -1, -1}, -1, "p");
  const graph::TensorId kt = block.input(1, {-1, -1, -1}, 1, "k");
  const graph::TensorId wt = block.input(2, {-1, -1, -1}, -1, "w");
  const graph::TensorId a = block.op(OpKind::Matmul, {pt, kt}, {}, "a");
  const graph::TensorId m = block.op(
      OpKind::AccumMax, {block.op(OpKind::ReduceMax, {a}, columns, "column_max")}, {}, "m");
  const graph::TensorId e =
      block.op(OpKind::Exp, {block.op(OpKind::Sub, {a, m}, {}, "shifted")}, {}, "e");
  const graph::TensorId o =
      block.op(OpKind::AccumRescaledSum, {block.op(OpKind::Matmul, {wt, e}, {}, "we"), m}, {}, "o");
  block.output(o, {-1, -1, -1});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  graph.output(graph.blockGraph("column_max", block.block(), {0, 1, 2}, {{"O", DType::F16}})[0]);
  schedule.graph = graph.finish();
  graph::validateSchedule(schedule);
  return schedule;
}

// f16, forloop 4: a = P·K_i on tensor cores, m = its element-wise running max, updated in
// the matmul's register epilogue; O accumulates (exp(a − m))·W rescaled by m, also on tensor
// cores. The loop reads m, so m stays in shared memory although its host is a matmul.
inline graph::Schedule elementwiseMaxRescaleSchedule() {
  using graph::DType;
  using graph::OpKind;
  graph::GraphBuilder program("elementwise_max_rescale");
  const graph::TensorId p = program.input("P", DType::F16, {64, 64});
  const graph::TensorId k = program.input("K", DType::F16, {64, 256});
  const graph::TensorId w = program.input("W", DType::F16, {64, 64});
  graph::OpAttrs toTile;
  toTile.dim = 1;
  toTile.to = 64;
  program.output(program.op(
      OpKind::Add, {program.op(OpKind::Matmul, {p, w}), program.op(OpKind::ReduceSum, {k}, toTile)},
      {}, "O"));
  graph::Schedule schedule;
  schedule.name = "elementwise_max_rescale.block";
  schedule.program = program.finish();

  const std::vector<graph::TensorDesc> inputs(schedule.program.tensors.begin(),
                                              schedule.program.tensors.begin() + 3);
  graph::BlockGraphBuilder block({1, 1, 1}, 128, 4, inputs);
  const graph::TensorId pt = block.input(0, {-1, -1, -1}, -1, "p");
  const graph::TensorId kt = block.input(1, {-1, -1, -1}, 1, "k");
  const graph::TensorId wt = block.input(2, {-1, -1, -1}, -1, "w");
  const graph::TensorId a = block.op(OpKind::Matmul, {pt, kt}, {}, "a");
  const graph::TensorId m = block.op(OpKind::AccumMax, {a}, {}, "m");
  const graph::TensorId e =
      block.op(OpKind::Exp, {block.op(OpKind::Sub, {a, m}, {}, "shifted")}, {}, "e");
  const graph::TensorId o =
      block.op(OpKind::AccumRescaledSum, {block.op(OpKind::Matmul, {e, wt}, {}, "ew"), m}, {}, "o");
  block.output(o, {-1, -1, -1});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  graph.output(
      graph.blockGraph("elementwise_max", block.block(), {0, 1, 2}, {{"O", DType::F16}})[0]);
  schedule.graph = graph.finish();
  graph::validateSchedule(schedule);
  return schedule;
}

// f32, forloop 4 over X's columns: s = row sums of the tile, computed before m = running row
// max is updated; L = rescaled sum of s by m. Folding L into s's op would read the previous
// iteration's factor.
inline graph::Schedule earlySumRescaleSchedule() {
  using graph::DType;
  using graph::OpKind;
  graph::OpAttrs rows;
  rows.dim = 1;
  graph::GraphBuilder program("early_sum_rescale");
  const graph::TensorId x = program.input("X", DType::F32, {8, 128});
  program.output(program.op(OpKind::ReduceSum, {x}, rows, "L"));
  graph::Schedule schedule;
  schedule.name = "early_sum_rescale.block";
  schedule.program = program.finish();

  graph::BlockGraphBuilder block({1, 1, 1}, 64, 4, {schedule.program.tensors[0]});
  const graph::TensorId xt = block.input(0, {-1, -1, -1}, 1, "x");
  const graph::TensorId s = block.op(OpKind::ReduceSum, {xt}, rows, "s");
  const graph::TensorId m =
      block.op(OpKind::AccumMax, {block.op(OpKind::ReduceMax, {xt}, rows, "row_max")}, {}, "m");
  block.output(block.op(OpKind::AccumRescaledSum, {s, m}, {}, "l"), {-1, -1, -1});
  graph::GraphBuilder graph = graph::GraphBuilder::withInputsOf(schedule.program, schedule.name);
  graph.output(graph.blockGraph("early_sum", block.block(), {0}, {{"L", DType::F32}})[0]);
  schedule.graph = graph.finish();
  graph::validateSchedule(schedule);
  return schedule;
}

}  // namespace mugraph::plan::testing
