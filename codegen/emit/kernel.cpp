// The whole kernel.cu: per kernel its entry (launch bounds, pointer and tensor-map
// parameters), then the body printed by its lowering path's emitter (KernelPlan::path).
#include "codegen/emit/kernel.h"

#include "codegen/emit/context.h"
#include "graph/hash.h"

namespace mugraph::codegen {
namespace {

// The tensor maps a warpgroup kernel takes after its pointers (none for other kernels).
const std::vector<plan::TensorMapDesc>& tensorMapsOf(const KernelPlan& plan) {
  static const std::vector<plan::TensorMapDesc> none;
  return plan.ring() ? plan.ring()->maps : none;
}

// "8", or "ceil_div(s, 64)" where the count follows a length.
std::string countText(const graph::LaunchCount& count, const graph::KernelGraph& graph) {
  if (count.isStatic()) return std::to_string(count.constant);
  return "ceil_div(" + graph.dims.at(count.dim).name + ", " + std::to_string(count.tile) + ")";
}

// The kernel's launch counts: the plan's formulas where the kernel takes the lengths.
graph::KernelLaunchCounts launchCountsOf(const KernelPlan& plan) {
  if (plan.launchCounts) return *plan.launchCounts;
  graph::KernelLaunchCounts counts;
  for (int axis = 0; axis < graph::kGridAxes; ++axis)
    counts.grid[axis].constant = plan.block->grid[axis];
  counts.forloop.constant = plan.block->forloop;
  return counts;
}

void emitKernel(const EmitContext& context) {
  const KernelPlan& plan = context.plan;
  const graph::BlockGraph& block = context.block();
  const graph::KernelGraph& graph = *plan.graph;
  CudaWriter& out = context.out;
  const graph::KernelLaunchCounts counts = launchCountsOf(plan);
  out.line("// " + context.kernel.entry + ": grid (" + countText(counts.grid[0], graph) + ", " +
           countText(counts.grid[1], graph) + ", " + countText(counts.grid[2], graph) + "), " +
           std::to_string(block.threads) + " threads, forloop " + countText(counts.forloop, graph) +
           ", " + std::to_string(plan.sharedBytes) + " bytes of dynamic shared memory.");
  // The warpgroup path promises one block per multiprocessor: setmaxnreg needs that cap.
  const std::string minBlocks =
      plan.minBlocksPerSm > 1 || plan.ring() ? ", " + std::to_string(plan.minBlocksPerSm) : "";
  // Clusters are fixed at compile time, so any launch of the kernel (cuLaunchKernel too) has them.
  const std::string cluster = block.clusterBlocks() == 1
                                  ? ""
                                  : "__cluster_dims__(" + std::to_string(block.cluster[0]) + ", " +
                                        std::to_string(block.cluster[1]) + ", " +
                                        std::to_string(block.cluster[2]) + ") ";
  out.line("extern \"C\" __global__ void " + cluster + "__launch_bounds__(" +
           std::to_string(block.threads) + minBlocks + ") " + context.kernel.entry + "(");
  std::vector<std::string> params;
  for (size_t p = 0; p < context.kernel.params.size(); ++p) {
    const KernelParam& param = context.kernel.params[p];
    const graph::TensorDesc& desc = plan.graph->tensors[param.tensor];
    params.push_back((param.written ? "" : "const ") + storageType(desc.dtype) + "* __restrict__ " +
                     context.paramName(static_cast<int>(p)));
  }
  const std::vector<plan::TensorMapDesc>& maps = tensorMapsOf(plan);
  for (size_t m = 0; m < maps.size(); ++m) {
    params.push_back("const __grid_constant__ mg::TensorMap mg_map" + std::to_string(m));
  }
  // Only a kernel that takes the lengths has them as parameters (the manifest lists the same):
  // a static kernel of a dynamic schedule (a split's combine) is launched as any static one.
  if (plan.launchCounts) {
    for (const graph::DynamicDim& dim : graph.dims) params.push_back("int " + dimParamName(dim.name));
  }
  for (size_t p = 0; p < params.size(); ++p) {
    out.line("    " + params[p] + (p + 1 == params.size() ? ") {" : ","));
  }
  out.enter();
  // Before anything reads memory: the manifest's "waits_for_prior_grids" promises these, so a
  // launcher may start this kernel while the one before it drains (mugraph_device.cuh).
  out.line("mg::launch_dependents();");
  out.line("mg::wait_prior_grids();");
  if (!counts.forloop.isStatic()) {
    // The trip count follows the length (graph::LaunchCount; the manifest has the formula).
    out.line("const int mg_forloop = " + context.count(counts.forloop) + ";");
  }
  if (plan.as<plan::ThreadOwnedPlan>()) {
    emitThreadOwnedBody(context);
  } else if (plan.as<plan::RowOwnedPlan>()) {
    emitRowOwnedBody(context);
  } else if (plan.as<plan::WarpgroupMmaPlan>()) {
    emitWarpgroupGemmBody(context);
  } else if (plan.as<plan::WarpgroupAttentionPlan>()) {
    emitWarpgroupAttentionBody(context);
  } else {
    emitGeneralBody(context);
  }
  out.close();
}

}  // namespace

EmittedSource emitSchedule(const plan::SchedulePlan& planned) {
  const graph::Schedule& schedule = *planned.lowered;
  EmittedSource result;
  result.abi = planAbi(schedule.graph);
  CudaWriter out;
  out.line("// Generated by mugraph from schedule '" + schedule.name + "' (hash " +
           graph::hashHex(graph::scheduleHash(schedule)) + "). Do not edit.");
  out.line("// Launch ABI: see manifest.json. Parameters are device pointers: the tensors a");
  out.line("// kernel writes, then those it reads; intermediates live in the workspace.");
  out.line("#include \"mugraph_device.cuh\"");
  out.blank();
  for (const KernelAbi& kernel : result.abi.kernels) {
    const KernelPlan& plan = planned.kernels.at(kernel.kernelIndex);
    const EmitContext context{plan, result.abi, kernel, out};
    emitKernel(context);
    out.blank();
    EmittedKernel emitted;
    emitted.entry = kernel.entry;
    emitted.grid = plan.block->grid;
    emitted.launchCounts = plan.launchCounts;
    emitted.cluster = plan.block->cluster;
    emitted.threads = plan.block->threads;
    emitted.dynamicSharedBytes = plan.sharedBytes;
    if (plan.ring()) {
      emitted.grid = plan.ring()->launchGrid;
      emitted.tensorMaps = tensorMapsOf(plan);
      result.archSpecific = true;
    }
    result.kernels.push_back(emitted);
  }
  result.source = out.text();
  return result;
}

}  // namespace mugraph::codegen
