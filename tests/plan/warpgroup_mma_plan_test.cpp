// Which block graphs the sm_90 warpgroup path takes and how it plans them: warpgroup roles,
// stages, operand majorness, tensor-map boxes and persistence; and what stays on mma.sync.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "graph/files.h"
#include "graph/json_format.h"
#include "plan/kernel_plan.h"
#include "plan/target.h"

namespace mugraph::plan {
namespace {

graph::Schedule shipped(const std::string& name) {
  return graph::loadSchedule(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/" + name + ".json");
}

KernelPlan planned(const graph::Schedule& schedule, const std::string& target = "sm_90") {
  return planKernel(schedule.graph, 0, targetByName(target));
}

TEST(WarpgroupMmaPlan, ALargeGemmGetsACopyWarpgroupTwoMultiplyingOnesAndPersistentBlocks) {
  const graph::Schedule schedule = shipped("gemm_4096.warpgroups");  // 128 x 256 x 64, 384
  const KernelPlan plan = planned(schedule);
  ASSERT_TRUE(plan.as<WarpgroupMmaPlan>());
  const WarpgroupMmaPlan& wg = *plan.as<WarpgroupMmaPlan>();
  EXPECT_EQ(wg.m, 128);
  EXPECT_EQ(wg.n, 256);
  EXPECT_EQ(wg.k, 64);
  EXPECT_TRUE(wg.producer);
  EXPECT_EQ(wg.consumers, 2);
  EXPECT_EQ(wg.mTiles, 1);
  EXPECT_EQ(wg.accumulatorsPerThread(), 128);
  EXPECT_EQ(wg.producerRegisters, 40);
  EXPECT_EQ(wg.consumerRegisters, 232);  // 128·40 + 256·232 ≤ 65536
  // A [128][64] is one K-major box; B [64][256] is four N-major boxes of 64 columns.
  EXPECT_TRUE(wg.a.kMajor);
  EXPECT_EQ(wg.a.boxes, 1);
  EXPECT_EQ(wg.a.rows, 128);
  EXPECT_FALSE(wg.b.kMajor);
  EXPECT_EQ(wg.b.boxes, 4);
  EXPECT_EQ(wg.b.rows, 64);
  EXPECT_EQ(wg.stageBytes, 128 * 64 * 2 + 64 * 256 * 2);
  EXPECT_EQ(wg.stages, 4);  // as many 48 KiB stages as fit in 227 KiB
  EXPECT_LE(plan.sharedBytes, targetByName("sm_90").sharedBytesPerBlock);
  EXPECT_EQ(plan.sharedBytes, wg.sharedBytes);
  EXPECT_EQ(wg.a.offset % 1024, 0);
  EXPECT_EQ(wg.b.offset % 1024, 0);
  EXPECT_EQ(wg.stageBytes % 1024, 0);
  // 32 x 16 tiles on 132 multiprocessors: one persistent block each, in groups of 8 along x.
  EXPECT_TRUE(wg.persistent);
  EXPECT_EQ(wg.launchGrid, (std::array<int64_t, 3>{132, 1, 1}));
  EXPECT_EQ(wg.rasterGroup, 8);
  // The tensor maps: A's box is 64 of K by 128 rows, B's 64 of N by 64 rows of K.
  ASSERT_EQ(wg.maps.size(), 2u);
  EXPECT_EQ(wg.maps[0].rank, 2);
  EXPECT_EQ(wg.maps[0].dims, (std::array<int64_t, 4>{4096, 4096, 1, 1}));
  EXPECT_EQ(wg.maps[0].strideBytes[1], 4096 * 2);
  EXPECT_EQ(wg.maps[0].box, (std::array<int64_t, 4>{64, 128, 1, 1}));
  EXPECT_EQ(wg.maps[1].box, (std::array<int64_t, 4>{64, 64, 1, 1}));
  // Box coordinates: A moves 128 rows per blockIdx.x and 64 of K per iteration.
  EXPECT_EQ(wg.a.blockStep[1][0], 128);
  EXPECT_EQ(wg.a.iterationStep[0], 64);
  EXPECT_EQ(wg.b.blockStep[0][1], 256);
  EXPECT_EQ(wg.b.iterationStep[1], 64);
}

TEST(WarpgroupMmaPlan, EitherLayoutOfEitherOperandIsReadInItsOwnMajorness) {
  const KernelPlan bt = planned(shipped("gemm_1024_bt.warpgroups"));  // B stored [N][K]
  ASSERT_TRUE(bt.as<WarpgroupMmaPlan>());
  EXPECT_TRUE(bt.as<WarpgroupMmaPlan>()->a.kMajor);
  EXPECT_TRUE(bt.as<WarpgroupMmaPlan>()->b.kMajor);
  EXPECT_EQ(bt.as<WarpgroupMmaPlan>()->b.rows, 128);  // a box of 64 of K by the 128 columns of N
  const KernelPlan at = planned(shipped("gemm_1024_at_bf16.warpgroups"));  // A stored [K][M]
  ASSERT_TRUE(at.as<WarpgroupMmaPlan>());
  EXPECT_FALSE(at.as<WarpgroupMmaPlan>()->a.kMajor);
  EXPECT_EQ(at.as<WarpgroupMmaPlan>()->a.boxes, 2);  // 128 rows of M in two boxes of 64
  EXPECT_EQ(at.as<WarpgroupMmaPlan>()->dtype, graph::DType::BF16);
  // 64 tiles: fewer than the multiprocessors, so one tile per block as scheduled.
  EXPECT_FALSE(at.as<WarpgroupMmaPlan>()->persistent);
  EXPECT_EQ(at.as<WarpgroupMmaPlan>()->launchGrid, (std::array<int64_t, 3>{8, 8, 1}));
}

TEST(WarpgroupMmaPlan, OneWarpgroupBothCopiesAndMultiplies) {
  const KernelPlan plan = planned(shipped("gemm_4096.tiled"));  // 128 x 128 x 64, 128 threads
  ASSERT_TRUE(plan.as<WarpgroupMmaPlan>());
  EXPECT_FALSE(plan.as<WarpgroupMmaPlan>()->producer);
  EXPECT_EQ(plan.as<WarpgroupMmaPlan>()->consumers, 1);
  EXPECT_EQ(plan.as<WarpgroupMmaPlan>()->mTiles, 2);
  EXPECT_EQ(plan.as<WarpgroupMmaPlan>()->producerRegisters, 0);
  EXPECT_FALSE(plan.as<WarpgroupMmaPlan>()->persistent);  // persistence needs the copy warpgroup
}

// Rows the copy engine cannot address (a row stride not a multiple of 16 bytes) are gathered
// by the copy warpgroup with cp.async in the widest chunk dividing every stride and the row.
TEST(WarpgroupMmaPlan, RowsTheCopyEngineCannotAddressAreGatheredWithCpAsync) {
  const KernelPlan plan = planned(shipped("gemm_1030.warpgroups"));  // 2060-byte rows
  ASSERT_TRUE(plan.as<WarpgroupMmaPlan>());
  const WarpgroupMmaPlan& wg = *plan.as<WarpgroupMmaPlan>();
  EXPECT_EQ(wg.a.gatherChunkBytes, 4);
  EXPECT_EQ(wg.b.gatherChunkBytes, 4);
  EXPECT_EQ(wg.a.map, -1);
  EXPECT_TRUE(wg.maps.empty());  // no tensor map is encoded for a gathered operand
  EXPECT_EQ(wg.a.view.strideBytes[1], 2060);
  EXPECT_EQ(wg.a.view.dims, (std::array<int64_t, 4>{1030, 1030, 1, 1}));
  EXPECT_EQ(wg.fillArrivals, 128);  // every copy-warpgroup thread arrives for its chunks
  EXPECT_EQ(wg.producerRegisters, targetByName("sm_90").warpgroup.gatheringProducerRegisters);
  EXPECT_EQ(wg.stageBytes, 128 * 64 * 2 + 64 * 64 * 2);  // the layout the copy engine makes
  // setmaxnreg moves registers within the pool the block launched with (168 a thread for 384
  // threads): the consumers' raise must fit what the copy warpgroup gave back, or it waits
  // forever.
  EXPECT_EQ(wg.consumers, 2);
  EXPECT_LE(128 * wg.producerRegisters + 256 * wg.consumerRegisters, 168 * 384);
  EXPECT_EQ(wg.consumerRegisters, 216);

  // 1028 columns: 2056-byte rows take 8-byte chunks. A stays on the copy engine where only
  // B's rows are unaligned, and the copy thread then arrives too.
  graph::Schedule schedule = shipped("gemm_1030.warpgroups");
  for (graph::KernelGraph* g : {&schedule.graph, &schedule.program}) {
    g->tensors[0].shape = {1030, 1024};  // A: 2048-byte rows
    g->tensors[1].shape = {1024, 1028};  // B: 2056-byte rows
    g->tensors[2].shape = {1030, 1028};
  }
  schedule.graph.ops[0].block->forloop = 16;
  const KernelPlan mixed = planned(schedule);
  ASSERT_TRUE(mixed.as<WarpgroupMmaPlan>());
  EXPECT_EQ(mixed.as<WarpgroupMmaPlan>()->a.gatherChunkBytes, 0);
  EXPECT_EQ(mixed.as<WarpgroupMmaPlan>()->a.map, 0);
  EXPECT_EQ(mixed.as<WarpgroupMmaPlan>()->b.gatherChunkBytes, 8);
  EXPECT_EQ(mixed.as<WarpgroupMmaPlan>()->fillArrivals, 129);

  // Without a copy warpgroup nobody gathers: the block stays on mma.sync.
  graph::Schedule single = shipped("gemm_1030.warpgroups");
  single.graph.ops[0].block->threads = 256;  // two warpgroups: one copies, one multiplies
  EXPECT_TRUE(planned(single).as<WarpgroupMmaPlan>());
  single.graph.ops[0].block->threads = 128;
  EXPECT_FALSE(planned(single).as<WarpgroupMmaPlan>());
}

// A cluster of two blocks along x (consecutive row tiles) shares its column tile of B: each
// block copies half of every B box's rows and multicasts it to both, and a stage empties once
// the consumers of both blocks released it.
TEST(WarpgroupMmaPlan, ClustersMulticastTheOperandTheirBlocksShare) {
  graph::Schedule schedule = shipped("gemm_4096.warpgroups");  // 128 x 256 x 64, persistent
  schedule.graph.ops[0].block->cluster = {2, 1, 1};
  const KernelPlan plan = planned(schedule);
  ASSERT_TRUE(plan.as<WarpgroupMmaPlan>());
  const WarpgroupMmaPlan& wg = *plan.as<WarpgroupMmaPlan>();
  EXPECT_EQ(wg.clusterBlocks, 2);
  EXPECT_EQ(wg.a.multicast, 1);  // A's rows differ along x
  EXPECT_EQ(wg.b.multicast, 2);
  EXPECT_EQ(wg.maps[wg.b.map].box, (std::array<int64_t, 4>{64, 32, 1, 1}));  // half of 64 rows
  EXPECT_EQ(wg.b.boxBytes, 64 * 64 * 2);  // each block's stage still holds the whole tile
  EXPECT_EQ(wg.launchGrid[0] % 2, 0);     // whole clusters of persistent blocks
  EXPECT_EQ(wg.rasterGroup % 2, 0);       // a raster group holds whole clusters

  // Along y the blocks share A's rows: in a persistent kernel, whose blocks walk tiles down
  // grid x, no such pair exists and the plan declines; with one tile per block, A is
  // multicast. On sm_80 there are no clusters.
  graph::Schedule alongY = shipped("gemm_4096.warpgroups");
  alongY.graph.ops[0].block->cluster = {1, 2, 1};
  EXPECT_FALSE(planned(alongY).as<WarpgroupMmaPlan>());
  graph::Schedule oneWave = shipped("gemm_1000.cluster2");  // 8 x 8 tiles of 128 x 128
  oneWave.graph.ops[0].block->cluster = {1, 2, 1};
  const KernelPlan yPlan = planned(oneWave);
  ASSERT_TRUE(yPlan.as<WarpgroupMmaPlan>());
  const WarpgroupMmaPlan& y = *yPlan.as<WarpgroupMmaPlan>();
  EXPECT_FALSE(y.persistent);
  EXPECT_EQ(y.clusterBlocks, 2);
  EXPECT_EQ(y.a.multicast, 2);  // A's rows are alike along y
  EXPECT_EQ(y.b.multicast, 1);
  const KernelPlan sm80 = planned(schedule, "sm_80");
  EXPECT_NE(launchProblem(sm80, targetByName("sm_80")).find("clusters of 2 blocks"),
            std::string::npos);
}

// Occupancy 2: each block takes half of the multiprocessor's shared memory and registers, so
// two run at once; a tile whose accumulators do not fit in half the registers is declined,
// and the other paths refuse an occupancy they do not size for.
TEST(WarpgroupMmaPlan, AnOccupancyOfTwoHalvesTheRingAndTheRegisterBudgets) {
  const Target& sm90 = targetByName("sm_90");
  // 768 x 3072 x 768 in 12 x 24 tiles of 64 x 128: a copy warpgroup and one consumer.
  graph::Schedule schedule = graph::loadSchedule(std::string(MUGRAPH_SOURCE_DIR) +
                                                 "/tests/plan/gemm_768x3072x768_64x128_o2.json");
  graph::BlockGraph& block = *schedule.graph.ops[0].block;
  EXPECT_EQ(block.occupancy, 2);
  block.occupancy = 1;
  const KernelPlan alone = planned(schedule);
  ASSERT_TRUE(alone.as<WarpgroupMmaPlan>());
  block.occupancy = 2;
  const KernelPlan two = planned(schedule);
  ASSERT_TRUE(two.as<WarpgroupMmaPlan>());
  const WarpgroupMmaPlan& wg = *two.as<WarpgroupMmaPlan>();
  EXPECT_EQ(wg.occupancy, 2);
  EXPECT_EQ(two.minBlocksPerSm, 2);  // promised to ptxas through __launch_bounds__
  EXPECT_LE(two.sharedBytes, sm90.sharedBytesForBlocksPerSm(2));
  EXPECT_LT(wg.stages, alone.as<WarpgroupMmaPlan>()->stages);
  EXPECT_GE(sm90.blocksPerSmByShared(two.sharedBytes), 2);
  // 256 threads launched with 128 registers each (65536 / 2 / 256), which ptxas compiles
  // every warpgroup within: the copy warpgroup keeps 40, the consumer may take up to 216.
  EXPECT_EQ(wg.launchedRegisters, 128);
  EXPECT_EQ(wg.producerRegisters, 40);
  EXPECT_EQ(wg.consumerRegisters, 216);
  EXPECT_LE(128 * wg.producerRegisters + 128 * wg.consumerRegisters, 65536 / 2);
  // 288 tiles, 264 blocks at once: persistent, two blocks a multiprocessor walking them.
  EXPECT_TRUE(wg.persistent);
  EXPECT_EQ(wg.launchGrid, (std::array<int64_t, 3>{264, 1, 1}));
  EXPECT_EQ(launchProblem(two, sm90), "");

  // Three blocks: 80 registers a thread, too few for 64 accumulators (ptxas: C7602).
  block.occupancy = 3;
  EXPECT_FALSE(planned(schedule).as<WarpgroupMmaPlan>());
  // In 64 x 64 tiles (32 accumulators), three fit, and 576 tiles make the blocks persistent:
  // three per multiprocessor walk them. (Read back from JSON: the occupancy round-trips.)
  nlohmann::json narrow = graph::scheduleToJson(schedule);
  narrow["kernels"][0]["grid"]["y"] = 48;
  narrow.erase("hash");
  const graph::Schedule narrowTiles = graph::scheduleFromJson(narrow, "narrow.json");
  EXPECT_EQ(narrowTiles.graph.ops[0].block->occupancy, 3);
  const KernelPlan three = planned(narrowTiles);
  ASSERT_TRUE(three.as<WarpgroupMmaPlan>());
  EXPECT_EQ(three.as<WarpgroupMmaPlan>()->n, 64);
  EXPECT_EQ(three.as<WarpgroupMmaPlan>()->launchedRegisters, 80);
  EXPECT_TRUE(three.as<WarpgroupMmaPlan>()->persistent);
  EXPECT_EQ(three.as<WarpgroupMmaPlan>()->launchGrid, (std::array<int64_t, 3>{396, 1, 1}));
  EXPECT_LE(three.sharedBytes, sm90.sharedBytesForBlocksPerSm(3));

  // 128 x 256 tiles hold 128 accumulators a thread: not in half the registers.
  graph::Schedule wide = shipped("gemm_4096.warpgroups");
  wide.graph.ops[0].block->occupancy = 2;
  const KernelPlan declined = planned(wide);
  EXPECT_FALSE(declined.ring());
  EXPECT_NE(launchProblem(declined, sm90).find("has occupancy 2"), std::string::npos);
}

TEST(WarpgroupMmaPlan, Sm80AndIneligibleBlockGraphsStayOnMmaSync) {
  EXPECT_FALSE(planned(shipped("gemm_4096.warpgroups"), "sm_80").as<WarpgroupMmaPlan>());
  // Attention: more than one matmul, element-wise ops and running maxima.
  EXPECT_FALSE(planned(shipped("gqa.split_kv")).as<WarpgroupMmaPlan>());
  graph::Schedule schedule = shipped("gemm_4096.warpgroups");
  graph::BlockGraph& block = *schedule.graph.ops[0].block;
  block.threads = 320;  // not whole warpgroups
  EXPECT_FALSE(planned(schedule).as<WarpgroupMmaPlan>());
  block.threads = 128;  // one warpgroup for 128 x 256: 256 accumulators a thread
  EXPECT_FALSE(planned(schedule).as<WarpgroupMmaPlan>());
  block.threads = 640;  // four multiplying warpgroups for 128 rows: not 64 rows each
  EXPECT_FALSE(planned(schedule).as<WarpgroupMmaPlan>());
}

TEST(WarpgroupAttentionPlan, FlashAttentionRunsItsChainInWgmmaRegisters) {
  const KernelPlan plan = planned(shipped("mha_prefill_2048.warpgroups"));  // 128 x 128, 384
  EXPECT_FALSE(plan.as<WarpgroupMmaPlan>());
  ASSERT_TRUE(plan.as<WarpgroupAttentionPlan>());
  const WarpgroupAttentionPlan& at = *plan.as<WarpgroupAttentionPlan>();
  EXPECT_EQ(at.rows, 128);
  EXPECT_EQ(at.kv, 128);
  EXPECT_EQ(at.d, 128);
  EXPECT_EQ(at.consumers, 2);
  EXPECT_TRUE(at.q.kMajor);   // Q [rows][d]: K of Q·K is d, contiguous
  EXPECT_TRUE(at.k.kMajor);   // K stored [seq][d]: the transposed view is K-major
  EXPECT_FALSE(at.v.kMajor);  // V [seq][d]: N-major for P·V
  EXPECT_EQ(at.maps.size(), 3u);
  EXPECT_LE(plan.sharedBytes, targetByName("sm_90").sharedBytesPerBlock);
  // The staging buffers reuse Q's bytes (each consumer's in its own 64 rows), which leaves
  // room for a third stage of K and V, and with it the overlapped loop.
  EXPECT_EQ(at.epilogueOffset, at.q.offset);
  EXPECT_EQ(at.stages, 3);
  EXPECT_FALSE(at.persistent);  // one tile per block, as scheduled
  EXPECT_EQ(at.launchGrid, plan.block->grid);
  EXPECT_TRUE(at.overlapped);
  EXPECT_GE(at.stagesOffset, at.qBytes);
  const graph::BlockGraph& block = *plan.block;
  const auto roleOf = [&](const std::string& tile) {
    for (size_t t = 0; t < block.tensors.size(); ++t) {
      if (block.tensors[t].name == tile) return at.roles[t];
    }
    return FragmentRole::None;
  };
  EXPECT_EQ(roleOf("qk"), FragmentRole::S);
  EXPECT_EQ(roleOf("e"), FragmentRole::S);
  EXPECT_EQ(roleOf("tile_max"), FragmentRole::Row);
  EXPECT_EQ(roleOf("m"), FragmentRole::Row);
  EXPECT_EQ(roleOf("s_acc"), FragmentRole::Row);
  EXPECT_EQ(roleOf("p_acc"), FragmentRole::O);
  EXPECT_EQ(roleOf("out"), FragmentRole::O);
}

TEST(WarpgroupAttentionPlan, AHeadsTransposedOperandIsAddressedInStorageOrder) {
  // V [16 heads, 2048, 128] kept as a projection writes it, [2048, 16, 128]: the tensor map
  // walks d, then heads, then positions (strides growing), and a box's rows run along the
  // positions with one head.
  graph::Schedule schedule = shipped("mha_prefill_2048.warpgroups");
  graph::TensorDesc& v = schedule.graph.tensors[schedule.graph.inputs[2]];
  ASSERT_EQ(v.name, "V");
  v.layout = graph::Layout::HeadsTransposed;
  const KernelPlan plan = planned(schedule);
  ASSERT_TRUE(plan.as<WarpgroupAttentionPlan>());
  const WarpgroupAttentionPlan& at = *plan.as<WarpgroupAttentionPlan>();
  ASSERT_GE(at.v.map, 0);
  const TensorMapDesc& map = at.maps[at.v.map];
  EXPECT_EQ(map.rank, 3);
  EXPECT_EQ((std::array<int64_t, 3>{map.dims[0], map.dims[1], map.dims[2]}),
            (std::array<int64_t, 3>{128, 16, 2048}));
  EXPECT_EQ((std::array<int64_t, 3>{map.strideBytes[0], map.strideBytes[1], map.strideBytes[2]}),
            (std::array<int64_t, 3>{2, 128 * 2, 16 * 128 * 2}));
  EXPECT_EQ(map.box[1], 1);
  EXPECT_EQ(map.box[2], at.kv);
  EXPECT_EQ(at.v.rowDim, 2);
  EXPECT_FALSE(at.v.kMajor);
  EXPECT_EQ(at.v.iterationStep[2], at.kv);  // the loop walks the positions
}

TEST(WarpgroupAttentionPlan, HeadDimsOfNoWholeBoxArePaddedAndWideOnesTakeNarrowKeyTiles) {
  // Phi-3's head dim 96: Q's and K's K (d) and V's N (dv) are one box and a half; each takes
  // a second box whose columns past 96 no multiply reads (six k-steps, wgmma N = 96).
  const KernelPlan d96 = planned(shipped("found/mha_prefill_16x1024_d96.v3b951690ab4491fa"));
  ASSERT_TRUE(d96.as<WarpgroupAttentionPlan>());
  const WarpgroupAttentionPlan& at = *d96.as<WarpgroupAttentionPlan>();
  EXPECT_EQ(at.d, 96);
  EXPECT_EQ(at.dv, 96);
  EXPECT_EQ(at.kv, 128);
  EXPECT_EQ(at.consumers, 2);
  EXPECT_EQ(at.q.boxes, 2);
  EXPECT_EQ(at.k.boxes, 2);
  EXPECT_EQ(at.v.boxes, 2);
  EXPECT_FALSE(at.v.kMajor);
  ASSERT_GE(at.q.map, 0);
  EXPECT_EQ(at.maps[at.q.map].dims[0], 96);  // the copy engine zero-fills past it
  EXPECT_EQ(at.maps[at.q.map].box[0], 64);
  EXPECT_EQ(at.stages, 3);  // the padded boxes cost what d 128's do: the overlapped loop
  EXPECT_TRUE(at.overlapped);

  // Gemma's 256: O takes 128 accumulators a thread, so key tiles of 64 positions and one
  // multiplying warpgroup, whose 64 query rows leave room for three stages.
  const KernelPlan d256 = planned(shipped("found/mha_prefill_8x1024_d256.ve208b25d1620563d"));
  ASSERT_TRUE(d256.as<WarpgroupAttentionPlan>());
  const WarpgroupAttentionPlan& wide = *d256.as<WarpgroupAttentionPlan>();
  EXPECT_EQ(wide.d, 256);
  EXPECT_EQ(wide.dv, 256);
  EXPECT_EQ(wide.kv, 64);
  EXPECT_EQ(wide.q.boxes, 4);
  EXPECT_EQ(wide.v.boxes, 4);
  EXPECT_EQ(wide.stages, 3);
  EXPECT_TRUE(wide.overlapped);
  EXPECT_LE(d256.sharedBytes, targetByName("sm_90").sharedBytesPerBlock);

  // A key tile of 128 at d 256 (half the iterations) needs more registers than a multiplying
  // thread gets.
  nlohmann::json text = nlohmann::json::parse(
      graph::readFileText(std::string(MUGRAPH_SOURCE_DIR) +
                          "/schedules/found/mha_prefill_8x1024_d256.ve208b25d1620563d.json"));
  text["kernels"][0]["forloop"] = text["kernels"][0]["forloop"].get<int>() / 2;
  text.erase("hash");
  const std::string path = ::testing::TempDir() + "/mha_prefill_8x1024_d256_kv128.json";
  graph::writeFileAtomic(path, text.dump());
  const KernelPlan kv128 = planned(graph::loadSchedule(path));
  EXPECT_EQ(kv128.block->forloop, 8);
  EXPECT_FALSE(kv128.as<WarpgroupAttentionPlan>());
}

TEST(WarpgroupAttentionPlan, OtherAttentionShapesStayOnTheGeneralPath) {
  // Split-KV partials also store their row max and sum: not this path (yet).
  EXPECT_FALSE(planned(shipped("gqa.split_kv")).as<WarpgroupAttentionPlan>());
  EXPECT_FALSE(
      planned(shipped("mha_prefill_2048.warpgroups"), "sm_80").as<WarpgroupAttentionPlan>());
  graph::Schedule schedule = shipped("mha_prefill_2048.warpgroups");
  schedule.graph.ops[0].block->threads = 256;  // one multiplying warpgroup for 128 rows
  EXPECT_FALSE(planned(schedule).as<WarpgroupAttentionPlan>());
}

}  // namespace
}  // namespace mugraph::plan
