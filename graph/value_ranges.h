// What a program's ops say about the range of its values, whatever its inputs: the one
// definition of these facts, for the search's cuts and its choice of what to store between
// kernels.
#pragma once

#include <vector>

#include "graph/ir.h"

namespace mugraph::graph {

// Per tensor of `program` (predefined ops only): values the ops make nonnegative whatever the
// inputs (squares, exponentials, sums and positive multiples of those).
std::vector<bool> nonnegativeTensors(const KernelGraph& program);

// Per tensor: values whose magnitude can be the square of the program's values' (a square;
// sums, differences, products and scalings of one; not its root or a quotient by it). In a
// 16-bit tensor such a value overflows where the values it squares pass 256 (f16's largest is
// 65504), or for a sum of n squares where their RMS passes 256/√n: 5.7 over 2048 channels,
// common in a decoder's residual stream. A model computes them in f32 (an RMSNorm casts up
// first); the program keeps no cast, so whoever stores one between kernels must keep it wide.
// exp is not counted: a softmax's exp(x − max) is at most 1, and an exp without the
// subtraction overflows in the program itself.
std::vector<bool> squaredRangeTensors(const KernelGraph& program);

}  // namespace mugraph::graph
