// Default block-graph schedules for predefined kernel ops, so that every kernel of a schedule
// is a block graph and its PTX needs nothing but itself (no cuBLAS, no CUTLASS):
//  - matmul: 2-D output tiles over the grid (x: rows, y: columns, z: one batch dim), the
//    contracted dim split over the for-loop, accum_sum (the tensor-core GEMM pattern);
//  - element-wise ops: the output tiled over up to three dims, broadcast operands replicated;
//  - reduce_sum / reduce_max: the kept dims tiled over the grid, the reduced dim split over
//    the for-loop with accum_sum / accum_max when the tile would be large;
//  - rms_norm: rows tiled over the grid, each block normalizing whole rows.
#pragma once

#include "graph/ir.h"
#include "plan/target.h"

namespace mugraph::plan {

// `schedule` with every predefined kernel op replaced by its default block graph (kernel
// name "<output>_<op>"); block-graph kernels are kept as they are. The result validates.
graph::Schedule lowerPredefinedOps(const graph::Schedule& schedule, const Target& target);

// The program as a schedule of default block graphs, named "<program>.default".
graph::Schedule lowerProgram(const graph::Program& program, const Target& target);

// The default block graph of one predefined op of `graph`.
graph::KernelOp lowerKernelOp(const graph::KernelGraph& graph, const graph::KernelOp& op,
                              const Target& target);

}  // namespace mugraph::plan
