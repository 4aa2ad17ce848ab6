// Human-readable views of programs and schedules for `mugraph show`: a text summary
// (kernels, grids, tiles, and the plan's shared memory and pipeline stages for a target:
// the numbers the generated code uses) and a Graphviz rendering.
#pragma once

#include <string>

#include "graph/ir.h"
#include "plan/target.h"

namespace mugraph::tools {

std::string describeProgram(const graph::Program& program, const plan::Target& target);
std::string describeSchedule(const graph::Schedule& schedule, const plan::Target& target);

std::string programToDot(const graph::Program& program);
std::string scheduleToDot(const graph::Schedule& schedule);

}  // namespace mugraph::tools
