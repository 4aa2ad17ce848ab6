#include "graph/types.h"

#include <sstream>

namespace mugraph::graph {

std::string_view dtypeName(DType dtype) {
  switch (dtype) {
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
    case DType::F32:
      return "f32";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  if (name == "f32") return DType::F32;
  return std::nullopt;
}

int64_t dtypeBytes(DType dtype) {
  return dtype == DType::F32 ? 4 : 2;
}

std::string_view layoutName(Layout layout) {
  switch (layout) {
    case Layout::RowMajor:
      return "row_major";
    case Layout::Transposed:
      return "transposed";
    case Layout::HeadsTransposed:
      return "heads_transposed";
  }
  return "?";
}

std::optional<Layout> parseLayout(std::string_view name) {
  for (Layout layout : {Layout::RowMajor, Layout::Transposed, Layout::HeadsTransposed}) {
    if (name == layoutName(layout)) return layout;
  }
  return std::nullopt;
}

std::pair<int, int> swappedDimsFromEnd(Layout layout) {
  switch (layout) {
    case Layout::RowMajor:
      return {0, 0};
    case Layout::Transposed:
      return {2, 1};
    case Layout::HeadsTransposed:
      return {3, 2};
  }
  return {0, 0};
}

int64_t elementCount(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::optional<int64_t> checkedElementCount(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

std::string formatDims(const Dims& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

Dims storedShape(const Dims& logicalShape, Layout layout) {
  const int rank = static_cast<int>(logicalShape.size());
  const auto [first, second] = swappedDimsFromEnd(layout);
  Dims stored = logicalShape;
  if (first > 0 && rank >= first) std::swap(stored[rank - first], stored[rank - second]);
  return stored;
}

std::vector<int64_t> storageStrides(const Dims& logicalShape, Layout layout) {
  const int rank = static_cast<int>(logicalShape.size());
  const auto [first, second] = swappedDimsFromEnd(layout);
  const bool swaps = first > 0 && rank >= first;
  const Dims stored = storedShape(logicalShape, layout);
  std::vector<int64_t> storedStride(rank, 1);
  for (int d = rank - 2; d >= 0; --d) storedStride[d] = storedStride[d + 1] * stored[d + 1];
  std::vector<int64_t> logicalStride = storedStride;
  if (swaps) std::swap(logicalStride[rank - first], logicalStride[rank - second]);
  return logicalStride;
}

}  // namespace mugraph::graph
