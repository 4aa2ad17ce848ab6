// Which lengths verify a dynamic schedule over its whole range (issue 28). The fingerprinted
// function at length n depends on n only through the structural case of each cut of a
// dynamic dim: how many parts or iterations (one, two, many), whether the last tile is full or
// partial, whether the last part runs a shortened loop. One length per case, plus the range's
// ends, stands for every length of that case; verify/README.md, "Dynamic dims", gives the
// argument and where it does not hold.
#pragma once

#include <string>
#include <vector>

#include "graph/dynamic_dims.h"
#include "graph/ir.h"

namespace mugraph::verify {

struct LengthCase {
  graph::DimValues values;  // a length for every dynamic dim
  std::string why;          // the structural cases it stands for, "; "-separated
};

// The lengths at which to fingerprint `schedule` (a dynamic kernel graph): for each dynamic
// dim, the range's min and max and one length per structural case of each of its cuts that
// lies in the range, the other dims at their max (their reference); and every dim at its min.
// Sorted, no repeats.
std::vector<LengthCase> lengthsCoveringRange(const graph::KernelGraph& schedule);

}  // namespace mugraph::verify
