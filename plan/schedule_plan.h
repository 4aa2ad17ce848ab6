// A whole schedule planned for one target: predefined ops lowered to their default block
// graphs, then every kernel planned (kernel_plan.h) and checked against the target's launch
// limits. This is what the code generator prints, what `mugraph show` summarizes and what
// the search's last check before a candidate is kept asks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "plan/kernel_plan.h"
#include "plan/target.h"

namespace mugraph::plan {

struct SchedulePlan {
  const Target* target = nullptr;
  // Heap-held so that the kernel plans, which point into it, survive moves of the plan.
  std::unique_ptr<const graph::Schedule> lowered;
  std::vector<KernelPlan> kernels;  // per kernel op of lowered->graph, in order
};

// Throws UserError naming the kernel when a kernel cannot be lowered or does not fit the
// target (launchProblem).
SchedulePlan planSchedule(const graph::Schedule& schedule, const Target& target);

}  // namespace mugraph::plan
