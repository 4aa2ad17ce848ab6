#include "search/cost_model.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "graph/error.h"
#include "graph/validate.h"
#include "plan/kernel_plan.h"
#include "plan/lower_predefined_ops.h"
#include "search/cost_calibration.h"
#include "search/cost_constants_text.h"

namespace mugraph::search {
namespace {

using graph::OpKind;

double bytesOf(const graph::TensorDesc& t) {
  return static_cast<double>(graph::elementCount(t.shape) * graph::dtypeBytes(t.dtype));
}

double matmulFlops(const graph::Dims& a, const graph::Dims& out) {
  return 2.0 * static_cast<double>(graph::elementCount(out)) * static_cast<double>(a.back());
}

struct KernelWork {
  double bytes = 0, tensorFlops = 0, syncMmaFlops = 0, generalMatmulFlops = 0, vectorFlops = 0;
  double registerOps = 0, exps = 0;  // element-wise work on registers (the warpgroup path)
  double blocks = 1, blocksPerSm = 1, serialSteps = 0;
  double stepMicroseconds = 0;      // latency of one for-loop step
  double postLoopMicroseconds = 0;  // of the ops after the loop
  double bytesPerBlock = 0;         // tiles one block loads over the whole loop
  // Bytes one block's ring keeps in flight (the warpgroup path; 0 elsewhere: no bound).
  double bytesInFlightPerBlock = 0;
  // A row-owned kernel's rows one warp takes one after another, per wave: their latency adds
  // to the memory time (measured on an H200: the same RMSNorm in blocks of 16 rows over 4
  // warps 18.4 us, of 8 rows over 8 warps 14.5 us).
  double rowsMicroseconds = 0;
  // Below 1 for blocks in clusters: each waits on the others' releases, whatever bounds it.
  double clusterEfficiency = 1;
  // A warpgroup kernel sized for several blocks per multiprocessor (its occupancy): the block
  // scheduler fills a multiprocessor up to it before the next, so a grid of fewer blocks than
  // multiprocessors times the occupancy runs on blocks / occupancy of them (H200: 1024^3 in
  // 128 tiles took 9.2 us one block a multiprocessor, 12.7 two; 128 x 4096 x 4096 in 128
  // tiles of 64 x 64, 21.3 alone, 23.4 two, 27.0 three).
  double packedOccupancy = 1;
};

KernelCostTerms kernelTerms(const KernelWork& w, const plan::Target& target,
                            const CostConstants& c) {
  const double sms = target.streamingMultiprocessors;
  const double peakBandwidth = target.memoryBytesPerSecond;
  const double resident = std::min(w.blocks, sms * w.blocksPerSm);
  const double activeSms = std::min(std::ceil(w.blocks / w.packedOccupancy), sms);
  const double streaming = c.bandwidthEfficiency * peakBandwidth;
  const double bandwidth = std::min(streaming, resident * c.perSmBandwidthShare * streaming / sms);
  const double smFraction = activeSms / sms;
  const double memory = w.bytes / bandwidth;
  const double compute =
      (w.tensorFlops / target.tensorFlopsPerSecond + w.syncMmaFlops / target.syncMmaFlopsPerSecond +
       w.generalMatmulFlops / c.generalMatmulFlopsPerSecond +
       w.vectorFlops / c.vectorFlopsPerSecond + w.registerOps / target.registerOpsPerSecond +
       w.exps / target.expPerSecond) /
      smFraction;
  const double waves = std::ceil(w.blocks / (sms * w.blocksPerSm));
  // Past one wave the last one runs partly empty: the SMs that get one block more than the
  // others set the time (4096^3 in 192 x 192 tiles: 484 tiles are 3.67 waves, run as 4, and
  // measured 226 us where 512 tiles of 128 x 256, 3.88 waves, took 213-220 on an H200).
  const double perWave = sms * w.blocksPerSm;
  const double tail = w.blocks > perWave ? waves / (w.blocks / perWave) : 1.0;
  const double latency =
      waves * (w.serialSteps * w.stepMicroseconds + w.postLoopMicroseconds) * 1e-6;
  // What one SM pulls from L2 and memory over the kernel: its share of the blocks (the blocks
  // resident on it at once share its load rate), each loading bytesPerBlock.
  const double blocksPerSmOverKernel = std::ceil(w.blocks / activeSms);
  double smLoadRate = c.perSmLoadBytesPerSecond;
  if (w.bytesInFlightPerBlock > 0) {
    const double together = std::min(w.blocksPerSm, blocksPerSmOverKernel);
    smLoadRate = std::min(
        smLoadRate, together * w.bytesInFlightPerBlock / (c.ringLoadLatencyMicroseconds * 1e-6));
  }
  const double blockLoads = blocksPerSmOverKernel * w.bytesPerBlock / smLoadRate;
  KernelCostTerms terms;
  terms.launch = c.launchMicroseconds;
  terms.memory = 1e6 * memory / w.clusterEfficiency;
  terms.compute = 1e6 * compute * tail / w.clusterEfficiency;
  terms.loop = 1e6 * latency / w.clusterEfficiency;
  terms.blockLoads = 1e6 * blockLoads / w.clusterEfficiency;
  terms.rows = waves * w.rowsMicroseconds;
  return terms;
}

double kernelMicroseconds(const KernelWork& w, const plan::Target& target, const CostConstants& c) {
  return kernelTerms(w, target, c).total();
}

// The share of its loop iterations a kernel runs: below 1 for causal attention on the warpgroup
// path, which stops each block of query rows after the last key tile below the diagonal.
double causalShareOfIterations(const plan::KernelPlan& planned) {
  const graph::BlockGraph& block = *planned.block;
  if (!planned.as<plan::WarpgroupAttentionPlan>() || block.forloop < 2) return 1.0;
  for (const graph::BlockOp& op : block.ops) {
    if (op.kind != OpKind::CausalMask) continue;
    const graph::TileSplit& split = planned.splits.at(op.inputs[0]);
    const graph::DimSplit& rows = split[split.size() - 2];
    const graph::DimSplit& cols = split.back();
    const int64_t queries = op.attrs.queries > 0 ? op.attrs.queries : rows.extent;
    double run = 0;
    for (int64_t part = 0; part < rows.parts(); ++part) {
      const int64_t first = rows.start(part, 0);
      const int64_t last = std::min(first + rows.tile, rows.extent) - 1;
      run += static_cast<double>(graph::causalIterations(first, last, cols.start(0, 0), cols.tile,
                                                         cols.extent, queries, block.forloop));
    }
    return run / static_cast<double>(rows.parts() * block.forloop);
  }
  return 1.0;
}

// What input op `o`'s tile bytes cost the SM of one block per byte, on the warpgroup GEMM
// path: a box whose rows start off L2 lines costs unalignedRowLoadFactor per byte, less where
// the blocks of a cluster multicast it (each asks L2 for 1 / multicast of it), never less than
// an aligned byte. 1 elsewhere.
double operandLoadShare(const plan::KernelPlan& planned, int o, const plan::Target& target,
                        const CostConstants& c) {
  const plan::WarpgroupMmaPlan* wg = planned.as<plan::WarpgroupMmaPlan>();
  if (!wg) return 1.0;
  for (const plan::BulkOperand* operand : {&wg->a, &wg->b}) {
    if (operand->op != o) continue;
    bool aligned = true;
    for (int i = 1; i < operand->view.rank; ++i) {
      aligned = aligned && operand->view.strideBytes[i] % target.l2LineBytes == 0;
    }
    // A multicast copy still lands the whole tile in every block's shared memory; it halves
    // the requests L2 serves, which bind only where rows straddle lines (measured: pairs of
    // blocks gain at 1000^3 and 3000^3, lose at 1024^3, 2048^3 and 4096^3).
    return std::max(1.0, (aligned ? 1.0 : c.unalignedRowLoadFactor) / operand->multicast);
  }
  return 1.0;
}

KernelWork blockGraphWork(const graph::KernelGraph& g, int kernelIndex, const plan::Target& target,
                          const CostConstants& c) {
  const graph::KernelOp& op = g.ops[kernelIndex];
  const graph::BlockGraph& block = *op.block;
  KernelWork w;
  w.blocks = static_cast<double>(block.blocks());
  const plan::KernelPlan planned = plan::planKernel(g, kernelIndex, target);
  w.blocksPerSm = static_cast<double>(target.blocksPerSmByShared(planned.sharedBytes));
  // A warpgroup kernel's registers are budgeted for its occupancy (setmaxnreg): no more of its
  // blocks fit, however little shared memory its ring takes.
  if (const plan::WarpgroupRing* ring = planned.ring()) {
    w.blocksPerSm = std::min(w.blocksPerSm, static_cast<double>(ring->occupancy));
    w.packedOccupancy = w.blocksPerSm;
  }
  w.serialSteps = static_cast<double>(block.forloop);
  const double threads = static_cast<double>(block.threads);
  // A step of the loop: a fixed latency, then each op the plan emits there (a barrier and
  // a pass over its elements, spread over the block's threads) and each tile copied in (16
  // bytes a thread at a time); ops after the loop run once. A thread-owned kernel has no
  // barriers: a few register operations per owned element.
  w.stepMicroseconds = c.iterationMicroseconds;
  if (const plan::ThreadOwnedPlan* owned = planned.as<plan::ThreadOwnedPlan>()) {
    w.stepMicroseconds = c.threadOwnedIterationMicroseconds * owned->perThread;
  }
  // A row-owned kernel: each warp's rows one after another; its element-wise work is on
  // registers, as on the warpgroup path.
  const plan::RowOwnedPlan* rowOwned = planned.as<plan::RowOwnedPlan>();
  if (rowOwned) {
    w.stepMicroseconds = 0;
    w.rowsMicroseconds = c.rowMicroseconds * static_cast<double>(rowOwned->rowsPerWarp());
  }
  // The warpgroup path: copies and multiplies are asynchronous, no barrier per op.
  const bool asynchronous = planned.ring() != nullptr;
  const plan::GeneralPlan* general = planned.as<plan::GeneralPlan>();
  const auto opMicroseconds = [&](double elements) {
    return c.opMicroseconds + c.elementMicroseconds * std::ceil(elements / threads);
  };
  const std::vector<graph::Phase>& phase = planned.phases;
  const double loopShare = causalShareOfIterations(planned);
  w.serialSteps *= loopShare;
  double tileReads = 0;
  double blockLoadBytes = 0;  // what the blocks' SMs pull through L2 (operandLoadShare)
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& bop = block.ops[o];
    if (bop.kind == OpKind::Output) {
      w.bytes += bytesOf(g.tensors[op.outputs[bop.kernelTensor]]);
      continue;
    }
    const graph::BlockTensor& tile = block.tensors[bop.output];
    const double tileElements = static_cast<double>(graph::elementCount(tile.shape));
    if (general) {
      const bool inLoop = bop.kind == OpKind::Input
                              ? planned.inputs[o]->perIteration
                              : plan::runsInLoop(planned, static_cast<int>(o));
      double cost = 0;
      if (bop.kind == OpKind::Input) {
        cost = c.elementMicroseconds *
               std::ceil(tileElements * static_cast<double>(graph::dtypeBytes(tile.dtype)) / 16.0 /
                         threads);
      } else if (general->ops[o].emitted) {
        cost = opMicroseconds(tileElements);
        // A reduction with a prologue computes the prologue's elements as it reads them.
        if (const int prologue = general->ops[o].prologue; prologue >= 0) {
          const double elements = static_cast<double>(
              graph::elementCount(block.tensors[block.ops[prologue].output].shape));
          cost += c.elementMicroseconds * std::ceil(elements / threads);
        }
        // A row phase does its element-wise ops' and its sum's element work under its one
        // barrier.
        if (const std::optional<plan::RowPhase>& phase = general->ops[o].rowPhase) {
          std::vector<int> moved = phase->elementwise;
          moved.push_back(phase->sum);
          for (int m : moved) {
            const double elements =
                static_cast<double>(graph::elementCount(block.tensors[block.ops[m].output].shape));
            cost += c.elementMicroseconds * std::ceil(elements / threads);
          }
        }
      }
      (inLoop ? w.stepMicroseconds : w.postLoopMicroseconds) += cost;
    }
    // An input the plan reads once (loop-invariant: a bias, a residual or a gate read by the
    // warpgroup GEMM's epilogue, a norm's weights) counts once, not once an iteration.
    const bool everyIteration = bop.kind == OpKind::Input && planned.inputs[o]
                                    ? planned.inputs[o]->perIteration
                                    : phase[bop.output] != graph::Phase::PostLoop;
    const double times =
        w.blocks * (everyIteration ? static_cast<double>(block.forloop) * loopShare : 1.0);
    if (bop.kind == OpKind::Input) {
      const double bytes =
          tileElements * static_cast<double>(graph::dtypeBytes(tile.dtype)) * times;
      tileReads += bytes;
      blockLoadBytes += bytes * operandLoadShare(planned, static_cast<int>(o), target, c);
    } else if (bop.kind == OpKind::Matmul) {
      // The plan decides whether a matmul runs on tensor cores (a few rows padded to a
      // fragment's 16) or on the general path.
      const double flops = matmulFlops(block.tensors[bop.inputs[0]].shape, tile.shape) * times;
      const std::optional<plan::MmaPlan> mma = general ? general->ops[o].mma : std::nullopt;
      if (asynchronous) {
        w.tensorFlops += flops;
      } else if (mma) {
        w.syncMmaFlops += mma->padded() ? flops * 16.0 / static_cast<double>(mma->rows) : flops;
      } else {
        w.generalMatmulFlops += flops;
      }
    } else if (asynchronous || rowOwned) {
      (bop.kind == OpKind::Exp ? w.exps : w.registerOps) += tileElements * times;
    } else {
      w.vectorFlops += tileElements * times;
    }
  }
  // A ring keeps all its stages but the one being multiplied in flight.
  if (asynchronous) {
    w.bytesInFlightPerBlock =
        static_cast<double>((planned.ring()->stages - 1) * planned.ring()->stageBytes);
  }
  // One multiplying warpgroup cannot hide its own waits: unless other blocks on the same
  // multiprocessor (occupancy) multiply meanwhile.
  if (asynchronous && planned.ring()->consumers * w.blocksPerSm == 1) {
    w.tensorFlops /= c.singleConsumerEfficiency;
  }
  if (asynchronous && planned.ring()->clusterBlocks > 1) w.clusterEfficiency = c.clusterEfficiency;
  double unique = 0;
  for (graph::TensorId t : op.inputs) unique += bytesOf(g.tensors[t]);
  w.bytes += unique + std::max(0.0, tileReads - unique) * c.l2RereadDiscount;
  w.bytesPerBlock = blockLoadBytes / w.blocks;
  return w;
}

}  // namespace

const std::vector<CostConstantField>& costConstantFields() {
  static const std::vector<CostConstantField> fields = {
      {"launch_us", &CostConstants::launchMicroseconds},
      {"per_sm_bandwidth_share", &CostConstants::perSmBandwidthShare},
      {"bandwidth_efficiency", &CostConstants::bandwidthEfficiency},
      {"vector_flops_per_s", &CostConstants::vectorFlopsPerSecond},
      {"general_matmul_flops_per_s", &CostConstants::generalMatmulFlopsPerSecond},
      {"l2_reread_discount", &CostConstants::l2RereadDiscount, false},
      {"iteration_us", &CostConstants::iterationMicroseconds},
      {"thread_owned_iteration_us", &CostConstants::threadOwnedIterationMicroseconds},
      {"op_us", &CostConstants::opMicroseconds},
      {"row_us", &CostConstants::rowMicroseconds, false},
      {"element_us", &CostConstants::elementMicroseconds},
      {"per_sm_load_bytes_per_s", &CostConstants::perSmLoadBytesPerSecond},
      {"ring_load_latency_us", &CostConstants::ringLoadLatencyMicroseconds},
      {"single_consumer_efficiency", &CostConstants::singleConsumerEfficiency},
      {"unaligned_row_load_factor", &CostConstants::unalignedRowLoadFactor},
      {"cluster_efficiency", &CostConstants::clusterEfficiency},
  };
  return fields;
}

const CostConstants& calibratedConstants() {
  static const CostConstants constants = costConstantsFromJson(
      nlohmann::json::parse(kCostConstantsText), "search/cost_constants.json (embedded)");
  return constants;
}

CostEstimate estimateCost(const graph::KernelGraph& graph, const plan::Target& target,
                          const CostConstants& constants) {
  // What runs is the plan: predefined ops are costed as their default block graphs.
  graph::KernelGraph lowered = graph;
  for (graph::KernelOp& op : lowered.ops) op = plan::lowerKernelOp(graph, op, target);
  CostEstimate estimate;
  for (size_t k = 0; k < lowered.ops.size(); ++k) {
    const KernelWork work = blockGraphWork(lowered, static_cast<int>(k), target, constants);
    estimate.microseconds += kernelMicroseconds(work, target, constants);
    estimate.bytes += work.bytes;
    estimate.flops += work.tensorFlops + work.syncMmaFlops + work.generalMatmulFlops +
                      work.vectorFlops + work.registerOps + work.exps;
    ++estimate.kernels;
  }
  return estimate;
}

KernelCostTerms kernelCostTerms(const graph::KernelGraph& graph, int kernelIndex,
                                const plan::Target& target, const CostConstants& constants) {
  const graph::KernelOp& op = graph.ops.at(kernelIndex);
  if (op.kind == OpKind::BlockGraph) {
    return kernelTerms(blockGraphWork(graph, kernelIndex, target, constants), target, constants);
  }
  graph::KernelGraph lowered = graph;
  lowered.ops[kernelIndex] = plan::lowerKernelOp(graph, op, target);
  return kernelTerms(blockGraphWork(lowered, kernelIndex, target, constants), target, constants);
}

double estimateKernelMicroseconds(const graph::KernelGraph& graph, int kernelIndex,
                                  const plan::Target& target, const CostConstants& constants) {
  return kernelCostTerms(graph, kernelIndex, target, constants).total();
}

const char* KernelCostTerms::bound() const {
  const std::pair<double, const char*> terms[] = {{memory, "memory"},
                                                  {compute, "compute"},
                                                  {loop, "loop latency"},
                                                  {blockLoads, "block loads"}};
  return std::max_element(std::begin(terms), std::end(terms),
                          [](const auto& a, const auto& b) { return a.first < b.first; })
      ->second;
}

}  // namespace mugraph::search
