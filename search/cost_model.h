// An analytic cost model that ranks verified schedules until GPU profiling is available.
// Per kernel: launch overhead + max(memory time, compute time, loop latency), where
//  - memory time = device bytes moved / bandwidth reachable by the active blocks. Bytes are
//    every tensor read once plus tile re-reads (replicated tiles, reloaded per block) at an
//    L2 discount, plus the outputs written;
//  - compute time = FLOPs of the matmuls the plan puts on tensor cores at tensor-core peak,
//    of the other matmuls at the general (shared-memory, CUDA-core) path's rate, and of the
//    other ops at CUDA-core peak, all scaled by the fraction of SMs the grid occupies (blocks
//    vs SMs, the plan's shared memory limiting blocks per SM);
//  - block time = ceil(blocks / SMs) x (bytes one block loads / what one SM can pull from L2
//    and memory): blocks resident on one SM together share its rate. A few blocks streaming a
//    whole KV cache are slow even if the total traffic is small. On the warpgroup path the
//    rate is also bounded by the bytes the SM's rings keep in flight over a copy's latency;
//  - loop latency = waves x (for-loop trips x step latency + the ops after the loop), a step
//    being a fixed latency plus, per op the plan emits in the loop, a barrier and its
//    elements per thread (thread-owned kernels: a few register operations per element).
// Predefined ops are costed as the default block graphs the plan lowers them to. The target
// gives SMs, shared memory, bandwidth and tensor-core throughput;
// the constants below are the rest, fitted to kernels measured on an H100.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "graph/ir.h"
#include "plan/target.h"

namespace mugraph::search {

// The model's free constants. Their values are fitted to measured kernels
// (`mugraph calibrate`, search/cost_calibration.h) and live in search/cost_constants.json,
// embedded at build time: calibratedConstants() is what the search ranks with. A default-
// constructed CostConstants holds the uncalibrated starting point of a fit.
struct CostConstants {
  double launchMicroseconds = 2.0;
  double perSmBandwidthShare = 2.0;     // one SM alone reaches this many times its fair share
  double bandwidthEfficiency = 1.0;     // fraction of the target's copy bandwidth streams reach
  double vectorFlopsPerSecond = 50e12;  // f32 CUDA cores
  // The general matmul path (operands read from shared memory by every thread).
  double generalMatmulFlopsPerSecond = 7e12;
  // Re-read tiles mostly hit L2 (whose rate the block-time term bounds): a byte read again
  // also costs this fraction of a device byte. Not fitted (CostConstantField::fitted): the fit
  // drove it to 0 wherever no program in the data re-reads operands at scale. The embedded
  // constants use 0.2, chosen over the calibration data (search/README.md, "Ranking and
  // verification"); 0.5 ranked skinny projections 89% off their fastest.
  double l2RereadDiscount = 0.2;
  double iterationMicroseconds = 0.25;  // one for-loop step's pipeline latency
  // One for-loop step of a thread-owned kernel (registers only, no barriers).
  double threadOwnedIterationMicroseconds = 0.25;
  // One row of a row-owned kernel: its loads' round trip to memory, its shuffles and stores; a
  // warp's rows follow one another (the loads of rows its loop unrolls are not reliably issued
  // together). Measured on an H200: RoPE of 32 heads over 2048 tokens, 32 rows a warp in 256
  // blocks, 16.5 us; 4 rows a warp in 1024 blocks, 8.9 us. Not fitted.
  double rowMicroseconds = 0.5;
  double opMicroseconds = 0.05;           // one op emitted in the loop: its barrier and setup
  double elementMicroseconds = 0.005;     // each element (or 16-byte copy) one thread handles
  double perSmLoadBytesPerSecond = 75e9;  // L2 -> one SM
  // How long a warpgroup ring's stage copy takes to land under load, from issue to its full
  // barrier. A multiprocessor's blocks keep at most (stages - 1) stages in flight each (one is
  // being multiplied), so they pull at most that many bytes per this latency (Little's law):
  // a ring of few or small stages cannot reach perSmLoadBytesPerSecond (measured: gemm_2000's
  // 256 x 128 tiles take 47 us with two stages of k 128, 29 us with four of k 64).
  double ringLoadLatencyMicroseconds = 2.0;
  // The same for a warpgroup kernel with one multiplying warpgroup: its copies' waits, its
  // epilogue and its loop overhead stall the tensor cores that a second warpgroup would keep
  // busy (measured: a 512 x 4096 x 4096 GEMM in 128 x 128 tiles takes 29 us with two, 34-35
  // with one).
  double singleConsumerEfficiency = 1.0;
  // What a block's bulk copies of an operand whose rows do not start on an L2 line (a row
  // stride not a multiple of Target::l2LineBytes) cost the SM per byte, against aligned rows:
  // each row of a box asks L2 for two lines (measured on an H200: 1.75 sectors per L2 request
  // at 1000^3, 3.7 at 1024^3; the same 128 x 64 kernel took 14.3 and 10.0 us).
  double unalignedRowLoadFactor = 1.0;
  // The share of its time a warpgroup kernel in thread-block clusters keeps: a stage empties
  // only once the consumers of every block of the cluster released it, so each block also
  // waits on the others, whether copies or multiplies bound it (measured: 4096^3 in 128 x 256
  // tiles, 201 us alone, 213 in pairs; 1024^3 in 128 x 64, 9.6 and 10.8-11.1).
  double clusterEfficiency = 1.0;
};

// Each constant by its name in search/cost_constants.json; the JSON reader and writer and
// the fit walk this table.
struct CostConstantField {
  const char* name;
  double CostConstants::*member;
  bool fitted = true;  // `mugraph calibrate --fit` changes it (else it is set by hand)
};
const std::vector<CostConstantField>& costConstantFields();

// The constants of search/cost_constants.json (embedded at build time).
const CostConstants& calibratedConstants();

struct CostEstimate {
  double microseconds = 0;
  double bytes = 0;  // device memory traffic, L2-discounted
  double flops = 0;
  int kernels = 0;
};

// Every kernel is costed as planned for `target` (plan/): predefined ops as their default
// block graphs, shared memory and tensor-core use as the plan decides.
CostEstimate estimateCost(const graph::KernelGraph& graph, const plan::Target& target,
                          const CostConstants& constants = calibratedConstants());

// Kernel `kernelIndex`'s estimate term by term, in microseconds (the header comment says what
// each is): the kernel takes launch + the largest of memory, compute, loop and block loads,
// + rows. `mugraph show` prints them, so a user sees what the model thinks bounds a kernel.
struct KernelCostTerms {
  double launch = 0, memory = 0, compute = 0, loop = 0, blockLoads = 0, rows = 0;
  double total() const { return launch + std::max({memory, compute, loop, blockLoads}) + rows; }
  const char* bound() const;  // the largest term's name
};
KernelCostTerms kernelCostTerms(const graph::KernelGraph& graph, int kernelIndex,
                                const plan::Target& target,
                                const CostConstants& constants = calibratedConstants());

// The microseconds of kernel `kernelIndex` alone, as estimateCost counts it: a schedule's
// estimate is the sum of its kernels', which is what lets the search compare two ways of
// computing the same segment by their kernels only (enumerate_kernel_graphs.h).
double estimateKernelMicroseconds(const graph::KernelGraph& graph, int kernelIndex,
                                  const plan::Target& target,
                                  const CostConstants& constants = calibratedConstants());

}  // namespace mugraph::search
