// What is decided about one block graph, for one target, before any code is written. The
// common part holds the graph facts every lowering path needs (phases, splits, producers and
// consumers of each tile, how outputs are stored) and the numbers the search, `mugraph show`
// and the manifest read (pipeline stages, shared-memory bytes, blocks per multiprocessor);
// `path` holds what one lowering path decided, one alternative per path (plan/paths/):
// the general mma.sync path, thread-owned elements, row-owned rows, warpgroup GEMM and
// warpgroup attention.
// Keeping these choices in one value makes the emitters plain printers of a decided plan,
// and makes the plan's shared-memory bytes the one number the search prunes and ranks with.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "graph/dynamic_extents.h"
#include "graph/ir.h"
#include "graph/tile_splits.h"
#include "graph/validate.h"
#include "plan/paths/general_plan.h"
#include "plan/paths/row_owned_plan.h"
#include "plan/paths/thread_owned_plan.h"
#include "plan/paths/warpgroup_attention_plan.h"
#include "plan/paths/warpgroup_mma_plan.h"
#include "plan/target.h"
#include "plan/tiles.h"

namespace mugraph::plan {

using PathPlan = std::variant<GeneralPlan, ThreadOwnedPlan, RowOwnedPlan, WarpgroupMmaPlan,
                              WarpgroupAttentionPlan>;

struct KernelPlan {
  const graph::KernelGraph* graph = nullptr;
  const graph::KernelOp* kernel = nullptr;
  const graph::BlockGraph* block = nullptr;
  std::vector<graph::Phase> phases;  // per tile
  // Per tile: how each dim walks its device dim (graph/tile_splits.h). Where a dim is partial
  // the generated code pads: loads zero-fill past the real elements, every value a computed
  // tile stores there is zero (so sums and matmul contractions over the padding add nothing),
  // maxima and mean squares loop over the real elements only, and stores skip the padding.
  std::vector<graph::TileSplit> splits;
  bool partial = false;  // some tile dim is partial
  // A loop whose last block part has fewer real iterations (graph/tile_splits.h): each block
  // stops after its own (KernelPlan::splits' `iterationsIn`).
  std::optional<graph::DimSplit> shortenedLoop;
  std::vector<int> producer;                // per tile: the op defining it
  std::vector<std::vector<int>> consumers;  // per tile: ops reading it (outputs too)
  // Per block op: how Input ops' tiles are copied (general and thread-owned paths; the
  // warpgroup paths copy boxes, warpgroup_ring.h) and how Output ops store (every path).
  std::vector<std::optional<InputCopy>> inputs;
  std::vector<std::optional<OutputCopy>> outputs;
  int pipelineStages = 1;   // buffers of prefetched input tiles (2 to Target::maxPipelineStages)
  int64_t sharedBytes = 0;  // dynamic shared memory of one block
  int minBlocksPerSm = 1;   // promised to ptxas through __launch_bounds__
  // Where the graph has dynamic dims the kernel takes their lengths as parameters (the graph is
  // planned at its reference extents, every cut of a dynamic dim partial): how its grid and
  // trip count follow them. Nothing for a static graph.
  std::optional<graph::KernelLaunchCounts> launchCounts;
  PathPlan path;

  // The path's plan, or null where the block graph runs on another path.
  template <typename Path>
  const Path* as() const {
    return std::get_if<Path>(&path);
  }
  // On a warpgroup path (GEMM or attention): its ring; else null.
  const WarpgroupRing* ring() const;
};

// Whether block op `op` runs inside the for-loop (once per iteration): per-iteration ops,
// accumulator updates and running ops (those on accum_max tiles only, whose last value is
// what post-loop ops read). Inputs and outputs are neither: their copies are planned apart.
bool runsInLoop(const KernelPlan& plan, int op);

// Decides everything for kernel op `kernelIndex` of `graph` (a block graph) on `target`. The
// plan points into `graph`, which must outlive it. Throws UserError for a kernel that is not
// a block graph; a plan that does not fit the target is returned (see checkLaunchable). A
// kernel of a graph with dynamic dims is planned for the lengths as parameters: on the
// warpgroup GEMM path where it runs at every length of the range (not persistent, no clusters
// or gathered operands, tensor-map strides and trip count fixed), else on the general path;
// never on the thread-owned or warpgroup attention paths. UserError naming the kernel where
// it cannot (split-KV cuts, causal masks).
KernelPlan planKernel(const graph::KernelGraph& graph, int kernelIndex, const Target& target);

// Why a planned kernel cannot be launched on `target` (shared memory beyond its limits; grid
// and thread limits are IR rules, checked by graph validation), or an empty string.
std::string launchProblem(const KernelPlan& plan, const Target& target);

// UserError naming `kernelName` with launchProblem's reason, if there is one.
void checkLaunchable(const KernelPlan& plan, const Target& target, const std::string& kernelName);

}  // namespace mugraph::plan
