// Element types, layouts and tensor descriptors shared by every level of the µgraph IR.
// Everything that reaches a file is spelled by name ("f16", "transposed"), never by number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mugraph::graph {

enum class DType { F16, BF16, F32 };

// How a device tensor is stored. The logical shape is what ops see; a Transposed tensor of
// logical shape [..., r, c] is stored as [..., c, r] so a KV cache kept as [batch, seq, dim]
// can feed matmul(Q, Kᵀ) as a logical [batch, dim, seq] operand without a copy. A
// HeadsTransposed tensor of logical shape [..., h, s, d] is stored as [..., s, h, d] (the dims
// before the last two swapped, rank 3 and more): a projection's result [s, h·d] read per head
// as [h, s, d] without a copy. storageStrides is the one definition of both.
enum class Layout { RowMajor, Transposed, HeadsTransposed };

// The two logical dims a layout swaps in storage, counted from the end (2 and 1 for
// Transposed, 3 and 2 for HeadsTransposed); 0 and 0 for RowMajor. The rank it needs is the
// first.
std::pair<int, int> swappedDimsFromEnd(Layout layout);

using Dims = std::vector<int64_t>;

inline constexpr int kMaxRank = 4;
inline constexpr int kStaticDim = -1;

struct TensorDesc {
  std::string name;
  DType dtype = DType::F32;
  Dims shape;
  Layout layout = Layout::RowMajor;
  // Per dim: the index of the dynamic dim (KernelGraph::dims) it is, or kStaticDim; empty when
  // every dim is static, so static tensors read, print, hash and compare as before. A dynamic
  // dim's entry in `shape` is its reference extent (graph/dynamic_dims.h).
  std::vector<int> dynamicDims = {};

  bool operator==(const TensorDesc&) const = default;
};

std::string_view dtypeName(DType dtype);
std::optional<DType> parseDType(std::string_view name);
int64_t dtypeBytes(DType dtype);

std::string_view layoutName(Layout layout);
std::optional<Layout> parseLayout(std::string_view name);

int64_t elementCount(const Dims& shape);
// The element count of a shape read from a file: nullopt if a dim is negative or the count
// does not fit in 64 bits, so a reader refuses the shape instead of overflowing.
std::optional<int64_t> checkedElementCount(const Dims& shape);
std::string formatDims(const Dims& shape);  // "[2, 256, 64]"

// Strides of the storage order (row-major over the stored shape) expressed per logical dim.
std::vector<int64_t> storageStrides(const Dims& logicalShape, Layout layout);
// The shape as stored, row-major: the dims `layout` swaps in storage, swapped.
Dims storedShape(const Dims& logicalShape, Layout layout);

}  // namespace mugraph::graph
