// A schedule against its program (validate.h): the same inputs in order, outputs the
// program's, stored as the program stores them.
#include "graph/validate.h"

#include <string>

#include "graph/types.h"

namespace mugraph::graph {

void validateSchedule(const Schedule& schedule) {
  const auto fail = [](const std::string& section, int index, int blockOp, const std::string& field,
                       const std::string& reason) {
    throw IrError(IrLocation{section, index, blockOp, field}, reason);
  };
  validateProgram(schedule.program, "program.");
  validateKernelGraph(schedule.graph);
  const Program& p = schedule.program;
  const KernelGraph& g = schedule.graph;
  if (p.dims != g.dims)
    fail("dims", -1, -1, "", "the schedule's dynamic dims differ from its program's");
  if (p.inputs.size() != g.inputs.size()) {
    fail("tensors", -1, -1, "",
         "the schedule has " + std::to_string(g.inputs.size()) + " inputs but its program has " +
             std::to_string(p.inputs.size()));
  }
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const TensorDesc& a = p.tensors[p.inputs[i]];
    const TensorDesc& b = g.tensors[g.inputs[i]];
    if (a != b) {
      fail("tensors", g.inputs[i], -1, "",
           "schedule input '" + b.name + "' differs from program input " + std::to_string(i) +
               " '" + a.name + "' (" + std::string(dtypeName(a.dtype)) + " " + formatDims(a.shape) +
               " " + std::string(layoutName(a.layout)) + ")");
    }
  }
  if (p.outputs.size() != g.outputs.size()) {
    fail("outputs", -1, -1, "",
         "the schedule has " + std::to_string(g.outputs.size()) + " outputs but its program has " +
             std::to_string(p.outputs.size()));
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const TensorDesc& b = g.tensors[g.outputs[i]];
    const auto match = p.findTensor(b.name);
    bool isProgramOutput = false;
    for (TensorId t : p.outputs) isProgramOutput = isProgramOutput || (match && t == *match);
    if (!isProgramOutput) {
      fail("outputs", static_cast<int>(i), -1, "",
           "schedule output '" + b.name + "' is not an output of the program");
    }
    const TensorDesc& a = p.tensors[*match];
    if (a.layout != b.layout) {
      fail("outputs", static_cast<int>(i), -1, "",
           "schedule output '" + b.name + "' is stored " + std::string(layoutName(b.layout)) +
               " but the program's is " + std::string(layoutName(a.layout)));
    }
    if (a.shape != b.shape || a.dtype != b.dtype || a.dynamicDims != b.dynamicDims) {
      fail("outputs", static_cast<int>(i), -1, "",
           "schedule output '" + b.name + "' is " + std::string(dtypeName(b.dtype)) + " " +
               formatDims(b.shape) + " but the program's is " + std::string(dtypeName(a.dtype)) +
               " " + formatDims(a.shape));
    }
  }
}

}  // namespace mugraph::graph
