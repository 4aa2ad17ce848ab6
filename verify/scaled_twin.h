// Scaled twins: the same check on smaller shapes where that decides the real one.
// A *map dim* is a dim (a class of dims of both graphs' tensors, tied through their ops) along
// which neither graph ever combines elements: no contraction, reduction, row-wise op, mask or
// for-loop runs along it, and every block graph that touches it cuts it over one grid axis of
// its own, into parts of one size. Each output element at position j of a map dim is then one
// fixed function of the inputs at j (and of the inputs that do not carry the dim), the same
// function for every j, in both graphs; so the graphs agree everywhere iff they agree on any
// one position. The twin keeps every part size and every partial last part, one whole period
// of all part sizes and at least two parts in every block graph, so each kind of block (first,
// last, partial) and the arithmetic that places it still runs. The argument, and what it does not cover, is
// written out in verify/README.md ("Scaled twins").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace mugraph::verify {

// One shrunk map dim: named by a tensor of the reference that carries it.
struct ShrunkDim {
  std::string tensor;
  int dim = 0;
  int64_t from = 0;    // its extent in the real graphs
  int64_t to = 0;      // its extent in the twins
  int64_t period = 1;  // the least common multiple of the part sizes cutting it
};

struct ScaledTwin {
  graph::KernelGraph reference;
  graph::KernelGraph candidate;
  std::vector<ShrunkDim> dims;
  // "dim 1 of 'Q' 4096 -> 384 (parts of 128), dim 0 of 'Q' 16 -> 3": for reports.
  std::string describe() const;
  // The real graphs' multiply-adds of their matmuls over the twins'.
  double workRatio = 1.0;
};

// Multiply-adds of the graph's predefined matmuls (a program's matmul work).
double matmulWork(const graph::KernelGraph& graph);

// The twins of `reference` and `candidate` (programs or schedules' kernel graphs with the same
// interface), or nothing where no map dim can shrink by at least `minRatio` (then the real
// shapes are checked). The twins are validated, and every block graph's tile cuts are checked
// to be those of the real graphs; anything outside the rules above leaves its dims whole.
std::optional<ScaledTwin> scaledTwin(const graph::KernelGraph& reference,
                                     const graph::KernelGraph& candidate, double minRatio = 2.0);

}  // namespace mugraph::verify
