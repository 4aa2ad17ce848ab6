// The target records (see target.h). Shared-memory figures are the CUDA programming guide's
// for compute capability 8.0 and 9.0; throughput figures are the measurements named beside
// them.
#include "plan/target.h"

#include <algorithm>
#include <sstream>

#include "graph/error.h"

namespace mugraph::plan {
namespace {

constexpr int64_t kKiB = 1024;

// wgmma and the bulk tensor copy engine of sm_90 (PTX ISA, CUDA driver API).
constexpr WarpgroupLimits kHopperWarpgroup{.threads = 128,
                                           .wgmmaRows = 64,
                                           .wgmmaK = 16,
                                           .swizzleRowBytes = 128,
                                           .swizzleAlignment = 1024,
                                           .maxBoxRows = 256,
                                           .stagingBytesPerWarp = 16 * 128,
                                           .maxAccumulators = 128,
                                           .producerRegisters = 40,
                                           .gatheringProducerRegisters = 64,
                                           .maxConsumerRegisters = 232,
                                           .rasterGroup = 8};

// One record per architecture, every field given, in Target's declaration order.
std::vector<Target> makeTargets() {
  return {
      Target{.name = "sm_80",
             .computeCapability = 80,
             .devices = "A100 SXM4",
             .streamingMultiprocessors = 108,
             .sharedBytesPerSm = 164 * kKiB,
             .sharedBytesPerBlock = 163 * kKiB,
             .sharedBytesReservedPerBlock = 1 * kKiB,
             .defaultDynamicSharedBytes = 48 * kKiB,
             .wantedBlocksPerSm = 2,
             .bytesInFlightPerBlock = 32 * kKiB,
             .maxPipelineStages = 8,
             .registersPerSm = 64 * kKiB,
             .warpgroupMma = false,
             .warpgroup = {},
             .maxClusterBlocks = 1,
             .l2LineBytes = 128,
             .memoryBytesPerSecond = 1.7e12,  // nominal 2.0 TB/s HBM2e; copies reach ~85%
             .tensorFlopsPerSecond = 280e12,  // nominal 312 TFLOP/s; cuBLAS reaches ~90%
             .syncMmaFlopsPerSecond = 280e12,
             .registerOpsPerSecond = 108 * 64 * 1.41e9,  // 64 f32 lanes per SM at 1.41 GHz
             .expPerSecond = 108 * 16 * 1.41e9},
      Target{.name = "sm_90",
             .computeCapability = 90,
             .devices = "H100 SXM5, H200",
             .streamingMultiprocessors = 132,
             .sharedBytesPerSm = 228 * kKiB,
             .sharedBytesPerBlock = 227 * kKiB,
             .sharedBytesReservedPerBlock = 1 * kKiB,
             .defaultDynamicSharedBytes = 48 * kKiB,
             .wantedBlocksPerSm = 2,
             .bytesInFlightPerBlock = 32 * kKiB,
             .maxPipelineStages = 8,
             .registersPerSm = 64 * kKiB,
             .warpgroupMma = true,
             .warpgroup = kHopperWarpgroup,
             .maxClusterBlocks = 8,
             .l2LineBytes = 128,
             .memoryBytesPerSecond = 3.0e12,  // H100 device copy, measured 3.02 TB/s
             .tensorFlopsPerSecond = 700e12,  // cuBLAS f16 4096^3 on an H100: 704 TFLOP/s
             // Our mma.sync GEMM at 4096^3 on an H100 (docs/measurements/bench_gpu_*): 267
             .syncMmaFlopsPerSecond = 270e12,
             .registerOpsPerSecond = 132 * 128 * 1.755e9,  // 128 f32 lanes per SM, 1.755 GHz
             .expPerSecond = 132 * 16 * 1.755e9},
  };
}

}  // namespace

int64_t Target::sharedBytesForBlocksPerSm(int blocks) const {
  return std::min(sharedBytesPerBlock,
                  sharedBytesPerSm / std::max(1, blocks) - sharedBytesReservedPerBlock);
}

int64_t Target::blocksPerSmByShared(int64_t sharedBytes) const {
  return std::max<int64_t>(1, sharedBytesPerSm / (sharedBytes + sharedBytesReservedPerBlock));
}

const std::vector<Target>& allTargets() {
  static const std::vector<Target> targets = makeTargets();
  return targets;
}

const Target& targetByName(const std::string& name, const std::string& where) {
  std::string known;
  for (const Target& target : allTargets()) {
    if (target.name == name) return target;
    known += (known.empty() ? "" : ", ") + target.name;
  }
  throw UserError(where, "unknown architecture '" + name + "' (supported: " + known + ")");
}

std::vector<const Target*> parseTargetList(const std::string& text, const std::string& where) {
  std::vector<const Target*> targets;
  std::istringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    const Target* target = &targetByName(item, where);
    if (std::find(targets.begin(), targets.end(), target) == targets.end()) {
      targets.push_back(target);
    }
  }
  if (targets.empty()) throw UserError(where, "names no architecture");
  return targets;
}

}  // namespace mugraph::plan
