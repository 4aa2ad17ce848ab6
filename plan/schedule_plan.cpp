#include "plan/schedule_plan.h"

#include "plan/lower_predefined_ops.h"

namespace mugraph::plan {

SchedulePlan planSchedule(const graph::Schedule& schedule, const Target& target) {
  SchedulePlan result;
  result.target = &target;
  result.lowered = std::make_unique<const graph::Schedule>(lowerPredefinedOps(schedule, target));
  const graph::KernelGraph& graph = result.lowered->graph;
  for (size_t k = 0; k < graph.ops.size(); ++k) {
    KernelPlan kernel = planKernel(graph, static_cast<int>(k), target);
    const std::string name = graph.ops[k].name.empty() ? std::to_string(k) : graph.ops[k].name;
    checkLaunchable(kernel, target, name);
    result.kernels.push_back(std::move(kernel));
  }
  return result;
}

}  // namespace mugraph::plan
