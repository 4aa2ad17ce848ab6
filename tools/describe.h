// Human-readable views of programs and schedules for `mugraph show`: a text summary
// (kernels, grids, tiles, shared memory) and a Graphviz rendering.
#pragma once

#include <string>

#include "graph/ir.h"

namespace mugraph::tools {

std::string describeProgram(const graph::Program& program);
std::string describeSchedule(const graph::Schedule& schedule);

std::string programToDot(const graph::Program& program);
std::string scheduleToDot(const graph::Schedule& schedule);

}  // namespace mugraph::tools
