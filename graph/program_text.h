// The program text format (.mg): one statement a line, nested calls allowed.
//
//   program gqa_mirage                      (optional; names the program)
//   dim s in [1, 65536]                     (a dynamic dim, before the inputs naming it)
//   input Q f16 [2, 256, 64]
//   input K f16 [2, 64, 4096] layout=transposed
//   A = matmul(Q, K)
//   S = reduce_sum(exp(A), dim=2)           (nested calls get fresh names t0, t1, ...)
//   Y = scale(A, c=0.125)
//   output O
//
// '#' starts a comment. Every error names the source and line: "gqa.mg:7: reason".
#pragma once

#include <string>
#include <string_view>

#include "graph/ir.h"

namespace mugraph::graph {

Program parseProgramText(std::string_view text, const std::string& sourceName);

// Prints a program so that parseProgramText gives it back exactly (same names, same order).
std::string programToText(const Program& program);

}  // namespace mugraph::graph
