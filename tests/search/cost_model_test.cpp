// The analytic cost model (search/cost_model.h): its estimates respect the bounds its terms
// state (launch overhead per kernel, tensor-core time for the FLOPs, memory time for the
// bytes), follow the target it is given, and rank a schedule that leaves most SMs idle below
// one that fills the GPU.
#include <gtest/gtest.h>

#include <array>
#include <stdexcept>
#include <string>
#include <utility>

#include "graph/files.h"
#include "graph/shape_inference.h"
#include "plan/kernel_plan.h"
#include "plan/lower_predefined_ops.h"
#include "search/cost_calibration.h"
#include "search/cost_model.h"

namespace mugraph::search {
namespace {

graph::Schedule shipped(const std::string& name) {
  return graph::loadSchedule(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/" + name);
}

const plan::Target& h100() {
  return plan::targetByName("sm_90");
}

TEST(CostModel, ATiledGemmCostsAtLeastItsFlopsAtTensorCorePeakPlusALaunch) {
  const graph::Schedule gemm = shipped("gemm_4096.tiled.json");
  const CostConstants constants;
  const CostEstimate cost = estimateCost(gemm.graph, h100(), constants);
  const double n = 4096;
  EXPECT_GE(cost.flops, 2 * n * n * n);  // the matmul, plus the accumulation's adds
  EXPECT_LE(cost.flops, 2 * n * n * n * 1.01);
  EXPECT_EQ(cost.kernels, 1);
  EXPECT_GE(cost.bytes, 3 * n * n * 2);  // A and B read, C written, f16
  const double computeFloor = 1e6 * cost.flops / h100().tensorFlopsPerSecond;
  EXPECT_GE(cost.microseconds, constants.launchMicroseconds + computeFloor);
  // Compute-bound and filling the GPU: not far above that floor.
  EXPECT_LE(cost.microseconds, 2 * (constants.launchMicroseconds + computeFloor));
}

// The terms `mugraph show` prints add up to the estimate the search ranks with, and the bound
// named is the largest term, for every kernel of a GEMM and a split-KV decode.
TEST(CostModel, AKernelsTermsAddUpToItsEstimateAndNameTheLargest) {
  for (const char* name : {"gemm_4096.tiled.json", "gqa_decode_32k.split_kv.json"}) {
    const graph::Schedule schedule = shipped(name);
    double total = 0;
    for (size_t k = 0; k < schedule.graph.ops.size(); ++k) {
      const int kernel = static_cast<int>(k);
      const KernelCostTerms terms = kernelCostTerms(schedule.graph, kernel, h100());
      EXPECT_DOUBLE_EQ(terms.total(), estimateKernelMicroseconds(schedule.graph, kernel, h100()));
      EXPECT_GT(terms.launch, 0);
      const std::pair<double, std::string> largest =
          std::max<std::pair<double, std::string>>({{terms.memory, "memory"},
                                                    {terms.compute, "compute"},
                                                    {terms.loop, "loop latency"},
                                                    {terms.blockLoads, "block loads"}});
      EXPECT_EQ(terms.bound(), largest.second) << name << " kernel " << k;
      total += terms.total();
    }
    EXPECT_NEAR(total, estimateCost(schedule.graph, h100()).microseconds, 1e-9) << name;
  }
}

TEST(CostModel, DecodeAttentionCostsAtLeastItsBytesAtCopyBandwidth) {
  const graph::Schedule decode = shipped("gqa_decode_32k.split_kv.json");
  const CostEstimate cost = estimateCost(decode.graph, h100());
  EXPECT_EQ(cost.kernels, static_cast<int>(decode.graph.ops.size()));
  double inputBytes = 0;
  for (graph::TensorId t : decode.graph.inputs) {
    const graph::TensorDesc& d = decode.graph.tensors[t];
    inputBytes += static_cast<double>(graph::elementCount(d.shape) * graph::dtypeBytes(d.dtype));
  }
  EXPECT_GE(cost.bytes, inputBytes);
  EXPECT_GE(cost.microseconds, 1e6 * inputBytes / h100().memoryBytesPerSecond);
}

TEST(CostModel, EveryKernelPaysTheLaunchOverhead) {
  const graph::Schedule decode = shipped("gqa_decode_4k.split_kv.json");
  CostConstants cheapLaunch;
  cheapLaunch.launchMicroseconds = 0;
  CostConstants dearLaunch;
  dearLaunch.launchMicroseconds = 10;
  const double difference = estimateCost(decode.graph, h100(), dearLaunch).microseconds -
                            estimateCost(decode.graph, h100(), cheapLaunch).microseconds;
  EXPECT_NEAR(difference, 10.0 * static_cast<double>(decode.graph.ops.size()), 1e-9);
}

TEST(CostModel, ASmallerGpuIsNeverEstimatedFaster) {
  for (const char* name : {"gemm_1024.tiled.json", "gemm_4096.tiled.json",
                           "gqa_decode_4k.split_kv.json", "gqa_mirage.split_kv.json"}) {
    SCOPED_TRACE(name);
    const graph::Schedule schedule = shipped(name);
    // Equal where the loop's latency binds on both (it does not depend on the GPU's size).
    EXPECT_GE(estimateCost(schedule.graph, plan::targetByName("sm_80")).microseconds,
              estimateCost(schedule.graph, h100()).microseconds);
  }
}

TEST(CostModel, AMatmulThePlanKeepsOffTensorCoresIsCostedAtTheGeneralPathsRate) {
  // The same tiled GEMM in f32: the plan has no tensor-core path for f32 tiles.
  const graph::Schedule f16 = shipped("gemm_1024.tiled.json");
  graph::Schedule f32 = f16;
  for (graph::TensorDesc& t : f32.graph.tensors) t.dtype = graph::DType::F32;
  for (graph::BlockTensor& t : f32.graph.ops.at(0).block->tensors) t.dtype = graph::DType::F32;
  const CostConstants constants;
  const CostEstimate onTensorCores = estimateCost(f16.graph, h100(), constants);
  const CostEstimate general = estimateCost(f32.graph, h100(), constants);
  EXPECT_DOUBLE_EQ(general.flops, onTensorCores.flops);
  const double generalFloor = 1e6 * 2 * 1024.0 * 1024 * 1024 / constants.generalMatmulFlopsPerSecond;
  EXPECT_GE(general.microseconds, generalFloor);
  EXPECT_GT(general.microseconds, 10 * onTensorCores.microseconds);
}

TEST(CostModel, LeavingMostMultiprocessorsIdleCostsMore) {
  // The 4096^3 GEMM's block graph over its full grid of 128x128 tiles, and the same block
  // graph on a GEMM with one row of tiles: per unit of work, the narrow grid (fewer blocks
  // than SMs) must be estimated slower.
  graph::Schedule wide = shipped("gemm_4096.tiled.json");
  const graph::BlockGraph& block = *wide.graph.ops.at(0).block;
  ASSERT_GE(block.blocks(), 132);
  const double wideMicroseconds = estimateCost(wide.graph, h100()).microseconds;
  graph::Schedule narrow = wide;
  graph::BlockGraph& narrowBlock = *narrow.graph.ops.at(0).block;
  const int64_t rowsOfBlocks = narrowBlock.grid[0];
  ASSERT_GE(rowsOfBlocks, 16);
  ASSERT_LT(narrowBlock.grid[1], h100().streamingMultiprocessors);
  narrowBlock.grid[0] = 1;
  for (graph::BlockOp& op : narrowBlock.ops) op.imap[0] = op.omap[0] = graph::kReplicated;
  for (graph::TensorDesc& t : narrow.graph.tensors) {
    if (t.name == "A" || t.name == "C") t.shape[0] /= rowsOfBlocks;
  }
  const double narrowMicroseconds = estimateCost(narrow.graph, h100()).microseconds;
  EXPECT_GT(narrowMicroseconds * static_cast<double>(rowsOfBlocks), 2 * wideMicroseconds);
}

TEST(CostModel, AnSmLoadsTheTilesOfEveryBlockItRunsAlsoWhenSeveralAreResident) {
  // The vocab projection's shipped schedule: 251 blocks of 16 x 128 outputs, each loading a
  // [16, 64] tile of A and a [64, 128] tile of B (f16) in each of 64 steps, four resident per
  // SM. With the L2-to-SM rate the only slow thing, the estimate is launch + (blocks an SM
  // runs over the kernel: 2) x (bytes one block loads) / rate. Blocks resident together share
  // their SM's rate; charging one wave of resident blocks (1 here) was several times too little.
  const graph::Schedule vocab = shipped("vocab_16x32001.partial.json");
  graph::KernelGraph lowered = vocab.graph;
  lowered.ops.at(0) = plan::lowerKernelOp(vocab.graph, vocab.graph.ops.at(0), h100());
  const plan::KernelPlan planned = plan::planKernel(lowered, 0, h100());
  ASSERT_GE(h100().blocksPerSmByShared(planned.sharedBytes), 2);
  ASSERT_EQ(lowered.ops.at(0).block->blocks(), 251);
  CostConstants constants;
  constants.perSmLoadBytesPerSecond = 1e9;
  const double bytesPerBlock = (16.0 * 64 + 64.0 * 128) * 2 * 64;
  EXPECT_NEAR(estimateCost(vocab.graph, h100(), constants).microseconds,
              constants.launchMicroseconds + 1e6 * 2 * bytesPerBlock / 1e9, 1.0);
}

// A pair of blocks in a cluster multicasts the tile they share: every block still receives the
// whole tile, but L2 serves half the requests, which bind only where rows straddle L2 lines.
// With the L2-to-SM rate the only slow thing, the pair is estimated faster where rows do not
// start on a line (1000: rows of 2000 bytes) and slower where they do (1024), by exactly the
// unaligned factor over the pair's efficiency, and by the efficiency alone.
TEST(CostModel, AClusterPaysWhereRowsStraddleL2LinesAndCostsItsWaitsElsewhere) {
  CostConstants constants;
  constants.perSmLoadBytesPerSecond = 1e9;
  constants.unalignedRowLoadFactor = 1.8;
  constants.clusterEfficiency = 0.9;
  const auto loadMicroseconds = [&](const graph::Schedule& s, std::array<int64_t, 3> cluster) {
    graph::KernelGraph g = s.graph;
    g.ops.at(0).block->cluster = cluster;
    return estimateCost(g, h100(), constants).microseconds - constants.launchMicroseconds;
  };
  // 8 x 16 blocks of 128 x 64 (two consumers): x pairs share B, y pairs share A.
  const graph::Schedule aligned = shipped("gemm_1024.warpgroups.json");
  const graph::Schedule unaligned =
      shipped("found/gemm_sweep_1000x1000x1000_bf16.v9ab468f594ec2749.json");
  ASSERT_EQ(unaligned.graph.ops.at(0).block->cluster, (std::array<int64_t, 3>{1, 2, 1}));
  const double alone = loadMicroseconds(aligned, {1, 1, 1});
  EXPECT_NEAR(loadMicroseconds(aligned, {2, 1, 1}), alone / 0.9, 1e-6 * alone);
  EXPECT_NEAR(loadMicroseconds(aligned, {1, 2, 1}), alone / 0.9, 1e-6 * alone);
  // Unaligned, alone: both operands at 1.8 per byte; paired along y, A at 1 (1.8 / 2 < 1).
  const double a = 128.0 * 1024 * 2, b = 1024.0 * 64 * 2;  // one block: 16 steps of K 64
  const double unalignedAlone = loadMicroseconds(unaligned, {1, 1, 1});
  EXPECT_NEAR(unalignedAlone, 1e6 * 1.8 * (a + b) / 1e9, 0.02 * unalignedAlone);
  EXPECT_NEAR(loadMicroseconds(unaligned, {1, 2, 1}), 1e6 * (a + 1.8 * b) / 1e9 / 0.9,
              0.02 * unalignedAlone);
  EXPECT_LT(loadMicroseconds(unaligned, {1, 2, 1}), unalignedAlone);
}

// A warpgroup ring keeps all its stages but the one being multiplied in flight, so an SM pulls
// at most (stages - 1) x stage bytes per copy latency (Little's law). gemm_2000's 256 x 128
// tiles, measured on an H100 (docs/measurements/cost_calibration_h100.json): two stages of
// k 128 took 47.4 us, four of k 64 29.0. With the L2-to-SM rate unbounded, each block's loads
// take its bytes over that rate: the two stages keep one 96 KiB stage in flight, the four
// three of 48 KiB, so the same bytes load 1.5 times slower.
TEST(CostModel, ARingOfFewStagesLoadsNoFasterThanItsBytesInFlightOverTheCopyLatency) {
  const CalibrationData data = loadCalibrationData(std::string(MUGRAPH_SOURCE_DIR) +
                                                   "/docs/measurements/cost_calibration_h100.json");
  const auto variant = [&](const std::string& name) -> const graph::Schedule& {
    for (const CalibrationProgram& program : data.programs) {
      for (const CalibrationVariant& v : program.variants) {
        if (v.name == name) return v.schedule;
      }
    }
    throw std::runtime_error("no variant " + name);
  };
  const graph::Schedule& twoStages = variant("v0424bdb95b0bf376");
  const graph::Schedule& fourStages = variant("vd4fa3ef1cf0de71c");
  CostConstants constants;
  constants.perSmLoadBytesPerSecond = 1e15;
  constants.ringLoadLatencyMicroseconds = 2.0;
  const auto loads = [&](const graph::Schedule& s, int expectedStages) {
    const plan::KernelPlan planned = plan::planKernel(s.graph, 0, h100());
    EXPECT_EQ(planned.ring()->stages, expectedStages);
    const graph::BlockGraph& block = *s.graph.ops.at(0).block;
    EXPECT_EQ(block.blocks(), 128);  // one a multiprocessor
    // Both operands' tiles, every step: 256 x k and k x 128 halves.
    const double bytesPerBlock =
        static_cast<double>(block.forloop) * (256.0 + 128.0) * (2048.0 / block.forloop) * 2;
    const double inFlight =
        static_cast<double>((planned.ring()->stages - 1) * planned.ring()->stageBytes);
    const double terms = kernelCostTerms(s.graph, 0, h100(), constants).blockLoads;
    EXPECT_NEAR(terms, bytesPerBlock / (inFlight / 2.0), 1e-6 * terms);
    return terms;
  };
  const double two = loads(twoStages, 2), four = loads(fourStages, 4);
  EXPECT_NEAR(two / four, 1.5, 0.01);
  // An unbounded latency-free ring leaves the loads to the SM's rate alone.
  constants.ringLoadLatencyMicroseconds = 0;
  constants.perSmLoadBytesPerSecond = 1e9;
  EXPECT_NEAR(kernelCostTerms(twoStages.graph, 0, h100(), constants).blockLoads,
              kernelCostTerms(fourStages.graph, 0, h100(), constants).blockLoads, 1e-6);
}

}  // namespace
}  // namespace mugraph::search
