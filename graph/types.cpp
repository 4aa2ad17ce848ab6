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
  return layout == Layout::RowMajor ? "row_major" : "transposed";
}

std::optional<Layout> parseLayout(std::string_view name) {
  if (name == "row_major") return Layout::RowMajor;
  if (name == "transposed") return Layout::Transposed;
  return std::nullopt;
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

std::vector<int64_t> storageStrides(const Dims& logicalShape, Layout layout) {
  const int rank = static_cast<int>(logicalShape.size());
  Dims stored = logicalShape;
  if (layout == Layout::Transposed && rank >= 2) std::swap(stored[rank - 1], stored[rank - 2]);
  std::vector<int64_t> storedStride(rank, 1);
  for (int d = rank - 2; d >= 0; --d) storedStride[d] = storedStride[d + 1] * stored[d + 1];
  std::vector<int64_t> logicalStride = storedStride;
  if (layout == Layout::Transposed && rank >= 2) {
    std::swap(logicalStride[rank - 1], logicalStride[rank - 2]);
  }
  return logicalStride;
}

}  // namespace mugraph::graph
