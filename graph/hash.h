// Canonical hashes of programs and schedules. A hash depends on what is computed, not on how
// the file is written: the order of independent statements, the names of intermediate
// tensors and tiles, and the operand order of add/mul do not change it. Input and output
// names, shapes, dtypes, layouts, attributes and every scheduling choice do.
#pragma once

#include <cstdint>
#include <string>

#include "graph/ir.h"

namespace mugraph::graph {

uint64_t programHash(const Program& program);
uint64_t kernelGraphHash(const KernelGraph& graph);
uint64_t scheduleHash(const Schedule& schedule);

std::string hashHex(uint64_t hash);  // 16 lowercase hex digits

// The name of a variant, and of the folder that holds it: "v" + hashHex(scheduleHash).
// `schedule` is the one written into that folder's schedule.json (for emitted code, the
// schedule as emitted, predefined ops lowered), so the folder name checks its contents.
std::string variantName(const Schedule& schedule);

}  // namespace mugraph::graph
