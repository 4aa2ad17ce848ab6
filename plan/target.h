// The facts about one GPU architecture that mugraph plans, prunes, ranks, emits and launches
// against. There is one record per architecture and every consumer (the search, the cost
// model, `mugraph show`, the emitter's launch checks, the runtime) asks the record that
// `--arch` selects instead of writing a number down again. Limits of the CUDA programming
// model that do not vary between architectures (warp size, threads per block, grid extents)
// are IR rules and live in graph/cuda_limits.h; a Target repeats none of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mugraph::plan {

// The shapes of warpgroup matrix multiplies (wgmma) and bulk tensor copies (TMA) that the
// warpgroup paths plan with and the emitters print: every one of these numbers is written
// here once, and the plans record the record they were made with.
struct WarpgroupLimits {
  int threads;        // one warpgroup: the four warps that issue a wgmma together
  int64_t wgmmaRows;  // M of one wgmma instruction
  int64_t wgmmaK;     // K of one wgmma instruction on 16-bit operands
  // One row of a 128-byte swizzled box: a box holds this many bytes of the tensor's
  // contiguous dim per row (64 16-bit elements).
  int64_t swizzleRowBytes;
  // The swizzle pattern's period (8 rows): boxes, stages and the shared-memory base start on it.
  int64_t swizzleAlignment;
  int64_t maxBoxRows;  // cuTensorMapEncodeTiled's limit on a box dim
  // A 16-bit result leaves through a staging buffer per multiplying warp: 16 rows of one
  // swizzled row each.
  int64_t stagingBytesPerWarp;
  int maxAccumulators;    // f32 accumulator registers per multiplying thread
  int producerRegisters;  // what a copy-issuing warpgroup keeps (setmaxnreg)
  // What a copy warpgroup that gathers with cp.async keeps: each thread holds its chunks'
  // addresses and predicates for a stage (ptxas spills below it).
  int gatheringProducerRegisters;
  int maxConsumerRegisters;  // the most setmaxnreg gives a multiplying thread
  int rasterGroup;           // tiles along grid x walked together by persistent blocks

  // Elements of `elementBytes` bytes in one swizzled row: a box's extent along the tensor's
  // contiguous dim.
  int64_t boxElements(int64_t elementBytes) const { return swizzleRowBytes / elementBytes; }
};

struct Target {
  std::string name;       // "sm_90": the --arch spelling, NVRTC's arch and the PTX file name
  int computeCapability;  // 90
  std::string devices;    // the GPUs the figures below are taken from
  int streamingMultiprocessors;
  int64_t sharedBytesPerSm;             // shared memory of one multiprocessor
  int64_t sharedBytesPerBlock;          // the most one block may opt in to
  int64_t sharedBytesReservedPerBlock;  // taken by the system from each resident block
  // Dynamic shared memory a kernel may use without raising its limit through the driver
  // (cuFuncSetAttribute); above it the runtime and every client must opt in.
  int64_t defaultDynamicSharedBytes;

  // The planner's occupancy policy: pipeline stages give way until this many blocks fit on
  // one multiprocessor; a stage keeps about `bytesInFlightPerBlock` of copies in flight.
  int wantedBlocksPerSm;
  int64_t bytesInFlightPerBlock;
  int maxPipelineStages;

  int64_t registersPerSm;  // 32-bit registers of one multiprocessor's register file
  // Warpgroup matrix multiplies (wgmma) and bulk tensor copies (sm_90 and later): the plan
  // puts eligible matmuls on that path (plan/paths/warpgroup_mma_plan.h).
  bool warpgroupMma;
  WarpgroupLimits warpgroup;  // meaningful where warpgroupMma
  // Blocks a thread-block cluster may have (the portable limit; 1: no clusters).
  int64_t maxClusterBlocks;
  // Bytes of one L2 cache line: a copied row that starts off a line boundary spans one line
  // more than its bytes need.
  int64_t l2LineBytes;

  // Throughput figures for the cost model, measured where the comment says.
  double memoryBytesPerSecond;   // device copy bandwidth
  double tensorFlopsPerSecond;   // dense f16 matmul with f32 accumulation, the fastest path
  double syncMmaFlopsPerSecond;  // the same through mma.sync (the path of sm_80)
  // Element-wise f32 work on registers (the warpgroup path's chains): one op per lane per clock
  // on every multiprocessor, and exp on the special-function units (16 per clock there).
  double registerOpsPerSecond;
  double expPerSecond;

  // Shared memory per block that still lets `blocks` blocks reside on one multiprocessor.
  int64_t sharedBytesForBlocksPerSm(int blocks) const;
  // How many blocks using `sharedBytes` each fit on one multiprocessor by shared memory.
  int64_t blocksPerSmByShared(int64_t sharedBytes) const;
};

// "sm_90" or "sm_80"; UserError naming `where` (a flag, a file) for anything else.
const Target& targetByName(const std::string& name, const std::string& where = "--arch");

// Every target, oldest first.
const std::vector<Target>& allTargets();

// "sm_80,sm_90" -> those targets, in the order given; UserError for an unknown or empty list.
std::vector<const Target*> parseTargetList(const std::string& text,
                                           const std::string& where = "--arch");

inline constexpr const char* kDefaultTarget = "sm_90";

}  // namespace mugraph::plan
