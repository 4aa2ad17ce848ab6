#include "onnx_import/causal_pattern.h"

#include <cmath>
#include <limits>

#include "graph/ops.h"

namespace mugraph::onnx_import {

double lowestFinite(graph::DType dtype) {
  switch (dtype) {
    case graph::DType::F16:
      return -65504.0;
    case graph::DType::BF16:
      return -3.3895313892515355e38;
    case graph::DType::F32:
      break;
  }
  return static_cast<double>(std::numeric_limits<float>::lowest());
}

std::optional<CausalPattern> causalPattern(const graph::Dims& shape,
                                           const std::function<double(int64_t)>& at,
                                           double lowest) {
  if (shape.size() < 2) return std::nullopt;
  const std::optional<int64_t> count = graph::checkedElementCount(shape);
  const int64_t rows = shape[shape.size() - 2], cols = shape.back();
  if (!count || *count == 0) return std::nullopt;
  auto kept = [](double v) { return v == 0.0; };
  auto masked = [lowest](double v) { return v <= lowest; };  // -inf included, NaN not
  // Row 0 keeps the first cols - q + 1 keys (graph::causallyKept), which gives q.
  int64_t keptInRowZero = 0;
  while (keptInRowZero < cols && kept(at(keptInRowZero))) ++keptInRowZero;
  if (keptInRowZero == 0 || keptInRowZero == cols) return std::nullopt;
  const int64_t queries = cols - keptInRowZero + 1;
  if (rows % queries != 0) return std::nullopt;
  for (int64_t i = 0; i < *count; ++i) {
    const int64_t row = (i / cols) % rows, col = i % cols;
    const double v = at(i);
    if (graph::causallyKept(row, col, rows, cols, queries) ? !kept(v) : !masked(v)) {
      return std::nullopt;
    }
  }
  return CausalPattern{rows, cols, queries};
}

}  // namespace mugraph::onnx_import
