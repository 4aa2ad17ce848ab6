// Whether a mask's values are the causal pattern the IR's causal_mask applies (graph/ops.h):
// 0 where a key is kept, -inf (or at most the dtype's lowest finite value, which transformers
// writes instead of -inf) where it is masked, bottom-right aligned in its last two dims, the
// same in every slice of the leading dims (a mask broadcast over batch and heads), and
// possibly repeated every q rows (GQA's query heads folded into the rows). Decided by the
// values alone, never by names: a mask that is anything else stays an added tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "graph/types.h"

namespace mugraph::onnx_import {

struct CausalPattern {
  int64_t rows = 0;  // the mask's last two dims
  int64_t cols = 0;
  int64_t queries = 0;  // query rows per sequence: causal_mask's queries=
};

// The lowest finite value of a float dtype: at or below it a mask value masks.
double lowestFinite(graph::DType dtype);

// `at(i)`: element i of a tensor of `shape`, row-major. nullopt unless the pattern holds and
// masks something (an all-zero mask is no causal structure). Reads element by element and stops
// at the first that does not fit, so a weight is rejected after its first few elements.
std::optional<CausalPattern> causalPattern(const graph::Dims& shape,
                                           const std::function<double(int64_t)>& at, double lowest);

}  // namespace mugraph::onnx_import
