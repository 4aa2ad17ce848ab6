// An analytic cost model that ranks verified schedules until GPU profiling is available.
// Per kernel: launch overhead + max(memory time, compute time, loop latency), where
//  - memory time = device bytes moved / bandwidth reachable by the active blocks. Bytes are
//    every tensor read once plus tile re-reads (replicated tiles, reloaded per block) at an
//    L2 discount, plus the outputs written;
//  - compute time = FLOPs of the matmuls the plan puts on tensor cores at tensor-core peak,
//    of the other matmuls at the general (shared-memory, CUDA-core) path's rate, and of the
//    other ops at CUDA-core peak, all scaled by the fraction of SMs the grid occupies (blocks
//    vs SMs, the plan's shared memory limiting blocks per SM);
//  - block time = waves x (bytes one block loads / what one SM can pull from L2 and memory),
//    so a few blocks streaming a whole KV cache are slow even if the total traffic is small;
//  - loop latency = waves x for-loop trips x a per-iteration pipeline latency.
// Predefined ops are costed as the default block graphs the plan lowers them to. The target
// gives SMs, shared memory, bandwidth and tensor-core throughput;
// the constants below are the rest, H100-class and documented; only the ranking matters.
#pragma once

#include <cstdint>

#include "graph/ir.h"
#include "plan/target.h"

namespace mugraph::search {

struct CostConstants {
  double launchMicroseconds = 2.0;
  double perSmBandwidthShare = 2.0;       // one SM alone reaches ~2x its fair share
  double vectorFlopsPerSecond = 50e12;    // f32 CUDA cores
  // The general matmul path (operands read from shared memory by every thread): a GQA block
  // graph with 64x512 score tiles, too large for tensor-core fragments, did 0.54 GFLOP in
  // 150 us on 64 of an H100's 132 SMs (7.4 TFLOP/s over the whole GPU).
  double generalMatmulFlopsPerSecond = 7e12;
  double l2RereadDiscount = 0.25;         // re-read tiles mostly hit L2
  double iterationMicroseconds = 0.25;    // one for-loop step's pipeline latency
  double perSmLoadBytesPerSecond = 75e9;  // L2 -> one SM (about 10 TB/s over 132 SMs)
};

struct CostEstimate {
  double microseconds = 0;
  double bytes = 0;  // device memory traffic, L2-discounted
  double flops = 0;
  int kernels = 0;
};

// Every kernel is costed as planned for `target` (plan/): predefined ops as their default
// block graphs, shared memory and tensor-core use as the plan decides.
CostEstimate estimateCost(const graph::KernelGraph& graph, const plan::Target& target,
                          const CostConstants& constants = {});

}  // namespace mugraph::search
