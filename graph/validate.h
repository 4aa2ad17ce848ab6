// Validation of programs and schedules: every rule of the IR checked in one pass, in file
// order, so the first problem reported is the first one a reader of the file meets. Errors
// are IrErrors carrying an IrLocation that the file readers turn into a line or JSON path.
#pragma once

#include <optional>
#include <vector>

#include "graph/ir.h"

namespace mugraph::graph {

// A program: predefined ops only, inputs declared, at least one output.
void validateProgram(const Program& program, const std::string& sectionPrefix = "");

// A kernel graph that may hold block graphs. Declared tensor descs must agree with inference.
void validateKernelGraph(const KernelGraph& graph, const std::string& sectionPrefix = "");

// A schedule: its program, its graph, and that the graph has the program's interface
// (same inputs in the same order, same output names, layouts, shapes and dtypes).
void validateSchedule(const Schedule& schedule);

// Whether each block tensor is computed once per iteration or once per block (after the
// accumulators). Running: an accum_max tile, and what is computed from running tiles only; it
// is updated every iteration, per-iteration ops read its current value and ops after the loop
// its final one. Invariant: the same in every iteration, an input tile the for-loop does not
// walk (no fmap) or what is computed from such tiles alone; per-iteration ops and the ops
// after the loop both read it (a bias or a residual added to an accumulated product).
// Computed by validation's rules; also used by the interpreter and codegen.
enum class Phase { PerIteration, PostLoop, Running, Invariant };

// The phase of an op's result from its operands' phases, or nullopt when it mixes
// per-iteration and post-loop tiles. Invariant operands fit either side. The one rule
// validation, the search and codegen share.
std::optional<Phase> combinedPhase(const std::vector<Phase>& operandPhases);
std::vector<Phase> blockTensorPhases(const BlockGraph& block);

}  // namespace mugraph::graph
