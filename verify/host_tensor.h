// Host tensors the interpreter computes on: a logical shape and row-major values of any
// number type (double for float tests, a finite-field pair for fingerprints).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/types.h"

namespace mugraph::verify {

template <class T>
struct HostTensor {
  graph::Dims shape;
  std::vector<T> data;  // row-major over `shape`
};

// Tensors by name: program inputs in, program outputs out.
template <class T>
using TensorMap = std::map<std::string, HostTensor<T>>;

}  // namespace mugraph::verify
