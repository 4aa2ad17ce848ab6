#include "verify/matmul_kernels.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <vector>

#include "verify/product_sums.h"

namespace mugraph::verify::kernels {
namespace {

// ---- double: ascending-k sums in registers, four rows by eight columns ----

typedef double Doubles4 __attribute__((vector_size(32)));
typedef double UnalignedDoubles4 __attribute__((vector_size(32), aligned(8)));
constexpr int64_t kDoubleCols = 8;

// Rows of out per task: enough that packing b's panels pays off.
constexpr int64_t kRowsPerChunk = 48;
// Below this many multiply-adds a matmul stays on the calling thread.
constexpr int64_t kParallelWork = int64_t{1} << 18;

// Rows [i0, i0 + R) by the kDoubleCols columns of `panel` ([depth][8], zero past `width`),
// continuing from the sums already in out (or from +0.0 when `first`).
template <int R>
__attribute__((always_inline)) inline void doubleTile(const double* a, int64_t inner,
                                                      const double* panel, int64_t depth,
                                                      double* out, int64_t cols, int64_t width,
                                                      bool first) {
  Doubles4 acc[R][2];
  for (int r = 0; r < R; ++r) {
    double start[kDoubleCols] = {};
    if (!first) std::copy_n(out + r * cols, width, start);
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 4; ++l) acc[r][h][l] = start[h * 4 + l];
    }
  }
  for (int64_t k = 0; k < depth; ++k) {
    const Doubles4 w[2] = {
        *reinterpret_cast<const UnalignedDoubles4*>(panel + k * kDoubleCols),
        *reinterpret_cast<const UnalignedDoubles4*>(panel + k * kDoubleCols + 4)};
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const double x = a[r * inner + k];
      const Doubles4 xs = {x, x, x, x};
      // A product, then a sum: two roundings, as dot does (no contraction into an FMA).
      acc[r][0] = acc[r][0] + xs * w[0];
      acc[r][1] = acc[r][1] + xs * w[1];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int64_t l = 0; l < width; ++l) out[r * cols + l] = acc[r][l / 4][l % 4];
  }
}

__attribute__((always_inline)) inline void doubleMatmul(const double* a, const double* b,
                                                        double* out, int64_t rows, int64_t inner,
                                                        int64_t cols) {
  constexpr int R = 4;
  const int64_t depthStep = detail::kPanelDepth;
  std::vector<double> panel(static_cast<size_t>(depthStep * kDoubleCols));
  for (int64_t j0 = 0; j0 < cols; j0 += kDoubleCols) {
    const int64_t width = std::min(kDoubleCols, cols - j0);
    for (int64_t k0 = 0; k0 < inner; k0 += depthStep) {
      const int64_t depth = std::min(depthStep, inner - k0);
      for (int64_t k = 0; k < depth; ++k) {
        for (int64_t l = 0; l < kDoubleCols; ++l) {
          panel[k * kDoubleCols + l] = l < width ? b[(k0 + k) * cols + j0 + l] : 0.0;
        }
      }
      int64_t i = 0;
      for (; i + R <= rows; i += R) {
        doubleTile<R>(a + i * inner + k0, inner, panel.data(), depth, out + i * cols + j0, cols,
                      width, k0 == 0);
      }
      for (; i < rows; ++i) {
        doubleTile<1>(a + i * inner + k0, inner, panel.data(), depth, out + i * cols + j0, cols,
                      width, k0 == 0);
      }
    }
  }
}

__attribute__((target("avx2"))) void doubleMatmulAvx2(const double* a, const double* b, double* out,
                                                      int64_t rows, int64_t inner, int64_t cols) {
  doubleMatmul(a, b, out, rows, inner, cols);
}

void doubleMatmulPortable(const double* a, const double* b, double* out, int64_t rows,
                          int64_t inner, int64_t cols) {
  doubleMatmul(a, b, out, rows, inner, cols);
}

// ---- finite field: a's parts are 16-bit halves, so a panel's sum of products of a half and
// a residue below 2^32 stays below kPanelDepth · 2^48 <= 2^63: exact in 64 bits ----

struct FieldPolicy {
  using Element = FieldElement;
  static constexpr int kRows = 3;
  static constexpr int kLanes = 4;
  static constexpr bool kIfma = false;
  static constexpr int kParts = 4;  // a's p-part low and high 16 bits, then its q-part's
  static constexpr std::array<bool, kParts> kHighOf{false, false, true, true};
  static_assert(detail::kPanelDepth <= (int64_t{1} << 15));

  static void aParts(const FieldElement& x, uint32_t* parts) {
    parts[0] = x.a & 0xFFFFu;
    parts[1] = x.a >> 16;
    parts[2] = x.b & 0xFFFFu;
    parts[3] = x.b >> 16;
  }
  static uint64_t bWord(const FieldElement& y) { return (uint64_t{y.b} << 32) | y.a; }
  // (low + high · 2^16) mod m; low < 2^63 and (high mod m) · 2^16 < 2^48 add without overflow.
  static uint32_t residue(uint64_t low, uint64_t high, uint64_t m) {
    return static_cast<uint32_t>((low + ((high % m) << 16)) % m);
  }
  // The q-part is combined even where an operand has none (its b is kNoQPart, still below
  // 2^32); matmul then marks those outputs, as dot does.
  static void combine(const detail::PartSums<FieldPolicy>& sums, FieldElement& out, bool first) {
    constexpr uint64_t p = FieldParameters::p, q = FieldParameters::q;
    const uint32_t a = residue(sums[0], sums[1], p);
    const uint32_t b = residue(sums[2], sums[3], q);
    out.a = first ? a : field::addMod(out.a, a, p);
    out.b = first ? b : field::addMod(out.b, b, q);
  }
};

// ---- finite field with AVX-512 IFMA: whole 32-bit residues, each product split at bit 52;
// a panel's low sums stay below kPanelDepth · 2^52 <= 2^60, its high sums below 2^20 ----

struct FieldIfmaPolicy {
  using Element = FieldElement;
  static constexpr int kRows = 6;
  static constexpr int kLanes = 8;
  static constexpr bool kIfma = true;
  static constexpr int kParts = 4;  // the p-part's low and high products, then the q-part's
  static constexpr std::array<bool, kParts> kHighOf{false, false, true, true};
  static_assert(detail::kPanelDepth <= (int64_t{1} << 8));

  static void aParts(const FieldElement& x, uint32_t* parts) {
    parts[0] = parts[1] = x.a;
    parts[2] = parts[3] = x.b;
  }
  static uint64_t bWord(const FieldElement& y) { return (uint64_t{y.b} << 32) | y.a; }
  // (low + high · 2^52) mod m; (high · (2^52 mod m)) < 2^52 adds to low < 2^60 without overflow.
  static uint32_t residue(uint64_t low, uint64_t high, uint64_t m) {
    const uint64_t shift = (uint64_t{1} << 52) % m;
    return static_cast<uint32_t>((low + high * shift) % m);
  }
  static void combine(const detail::PartSums<FieldIfmaPolicy>& sums, FieldElement& out,
                      bool first) {
    constexpr uint64_t p = FieldParameters::p, q = FieldParameters::q;
    const uint32_t a = residue(sums[0], sums[1], p);
    const uint32_t b = residue(sums[2], sums[3], q);
    out.a = first ? a : field::addMod(out.a, a, p);
    out.b = first ? b : field::addMod(out.b, b, q);
  }
};

// ---- degree domain: keys multiply in Z/2^64 as lo·lo + ((hi·lo + lo·hi) << 32) ----

struct DegreeKeyPolicy {
  using Element = DegreeValue;
  static constexpr int kRows = 4;
  static constexpr int kLanes = 4;
  static constexpr bool kIfma = false;
  static constexpr int kParts = 3;  // lo(x)·lo(y), hi(x)·lo(y), lo(x)·hi(y)
  static constexpr std::array<bool, kParts> kHighOf{false, false, true};

  static void aParts(const DegreeValue& x, uint32_t* parts) {
    parts[0] = static_cast<uint32_t>(x.key);
    parts[1] = static_cast<uint32_t>(x.key >> 32);
    parts[2] = static_cast<uint32_t>(x.key);
  }
  static uint64_t bWord(const DegreeValue& y) { return y.key; }
  static void combine(const detail::PartSums<DegreeKeyPolicy>& sums, DegreeValue& out, bool first) {
    const uint64_t key = sums[0] + ((sums[1] + sums[2]) << 32);
    out.key = first ? key : out.key + key;
  }
};

// What an output's degree needs of one row of a (or column of b). A line is `shared` when no
// element is the zero polynomial and all have one denominator (its degree and key): a polynomial
// line, or a row of exp values over one softmax sum. Every product of a shared row and a shared
// column then has the denominator of the two lines, and dot's sum keeps it (degree_domain.h,
// addLike over one denKey): its numerator degree is the max over k of the two degrees' sum, its
// key the sum of the keys' products, its traits the OR of both lines' traits.
struct DegreeLine {
  bool polynomial = true;  // dot's own fast case: no denominator, whatever its key
  bool shared = true;
  bool constant = true;  // every numerator degree equal
  int32_t maxNum = -1;
  int32_t den = 0;
  uint64_t denKey = 1;
  uint64_t traits = 0;
};

// Folds x, the k-th element of a line whose first element is `first`, into `line`.
void extendLine(DegreeLine& line, const DegreeValue& x, const DegreeValue& first) {
  line.polynomial = line.polynomial && x.num >= 0 && x.den == 0;
  line.shared = line.shared && x.num >= 0 && x.den == first.den && x.denKey == first.denKey;
  line.constant = line.constant && x.num == first.num;
  line.maxNum = std::max(line.maxNum, x.num);
  line.traits |= x.traits;
}

DegreeLine rowLine(const DegreeValue* row, int64_t n) {
  DegreeLine line;
  if (n > 0) line = DegreeLine{true, true, true, -1, row[0].den, row[0].denKey, 0};
  for (int64_t k = 0; k < n; ++k) extendLine(line, row[k], row[0]);
  return line;
}

// The lines of b's columns, reading b row by row.
std::vector<DegreeLine> columnLines(const DegreeValue* b, int64_t inner, int64_t cols) {
  std::vector<DegreeLine> lines(static_cast<size_t>(cols));
  for (int64_t j = 0; j < cols && inner > 0; ++j) {
    lines[j] = DegreeLine{true, true, true, -1, b[j].den, b[j].denKey, 0};
  }
  for (int64_t k = 0; k < inner; ++k) {
    for (int64_t j = 0; j < cols; ++j) extendLine(lines[j], b[k * cols + j], b[j]);
  }
  return lines;
}

// Runs body(row, count) over chunks of kRowsPerChunk rows of out, in parallel when the work
// (multiply-adds) is large; chunks write disjoint rows.
template <class Body>
void forRowChunks(int64_t rows, int64_t workPerRow, const Body& body) {
  const int64_t chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  const auto run = [&](int64_t chunk) {
    const int64_t row = chunk * kRowsPerChunk;
    body(row, std::min(kRowsPerChunk, rows - row));
  };
  if (chunks < 2 || rows * workPerRow < kParallelWork) {
    for (int64_t chunk = 0; chunk < chunks; ++chunk) run(chunk);
    return;
  }
  tbb::parallel_for(int64_t{0}, chunks, run);
}

}  // namespace

bool supported(Isa isa) {
  switch (isa) {
    case Isa::Portable:
      return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2");
    case Isa::Avx512Ifma:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512ifma");
  }
  return false;
}

Isa bestIsa() {
  static const Isa isa = supported(Isa::Avx512Ifma) ? Isa::Avx512Ifma
                         : supported(Isa::Avx2)     ? Isa::Avx2
                                                    : Isa::Portable;
  return isa;
}

void matmul(const double* a, const double* b, double* out, int64_t rows, int64_t inner,
            int64_t cols, Isa isa) {
  if (inner == 0) {
    std::fill(out, out + rows * cols, 0.0);
    return;
  }
  forRowChunks(rows, inner * cols, [&](int64_t row, int64_t count) {
    if (isa != Isa::Portable) {
      doubleMatmulAvx2(a + row * inner, b, out + row * cols, count, inner, cols);
    } else {
      doubleMatmulPortable(a + row * inner, b, out + row * cols, count, inner, cols);
    }
  });
}

void matmul(const FieldElement* a, const FieldElement* b, FieldElement* out, int64_t rows,
            int64_t inner, int64_t cols, Isa isa) {
  // dot's q-part exists iff every operand it multiplies has one.
  std::vector<uint8_t> colHasQ(static_cast<size_t>(cols), 1);
  for (int64_t k = 0; k < inner; ++k) {
    for (int64_t j = 0; j < cols; ++j) colHasQ[j] &= b[k * cols + j].hasQPart();
  }
  forRowChunks(rows, inner * cols, [&](int64_t row, int64_t count) {
    const FieldElement* aRows = a + row * inner;
    FieldElement* outRows = out + row * cols;
    if (isa == Isa::Avx512Ifma) {
      detail::blockedProductSums<FieldIfmaPolicy>(aRows, b, outRows, count, inner, cols, isa);
    } else {
      detail::blockedProductSums<FieldPolicy>(aRows, b, outRows, count, inner, cols, isa);
    }
    for (int64_t i = 0; i < count; ++i) {
      const FieldElement* aRow = aRows + i * inner;
      const bool rowHasQ =
          std::all_of(aRow, aRow + inner, [](const FieldElement& x) { return x.hasQPart(); });
      for (int64_t j = 0; j < cols; ++j) {
        FieldElement& o = outRows[i * cols + j];
        if (inner == 0) o = FieldElement{0, 0};
        if (!(rowHasQ && colHasQ[j])) o.b = FieldElement::kNoQPart;
      }
    }
  });
}

void matmul(const DegreeValue* a, const DegreeValue* b, DegreeValue* out, int64_t rows,
            int64_t inner, int64_t cols, Isa isa) {
  using Domain = NumberDomain<DegreeValue>;
  const std::vector<DegreeLine> columns = columnLines(b, inner, cols);
  forRowChunks(rows, inner * cols, [&](int64_t row, int64_t count) {
    detail::blockedProductSums<DegreeKeyPolicy>(a + row * inner, b, out + row * cols, count, inner,
                                                cols, isa == Isa::Portable ? isa : Isa::Avx2);
    for (int64_t i = row; i < row + count; ++i) {
      const DegreeValue* aRow = a + i * inner;
      const DegreeLine line = rowLine(aRow, inner);
      for (int64_t j = 0; j < cols; ++j) {
        const DegreeLine& column = columns[j];
        DegreeValue& o = out[i * cols + j];
        if (inner == 0 ||
            !((line.polynomial && column.polynomial) || (line.shared && column.shared))) {
          o = Domain::dot(aRow, 1, b + j, cols, inner);
          continue;
        }
        // max over k of the two degrees' sum; a constant line makes it a sum of maxima.
        int32_t num = -1;
        if (line.constant) {
          num = aRow[0].num + column.maxNum;
        } else if (column.constant) {
          num = line.maxNum + b[j].num;
        } else {
          for (int64_t k = 0; k < inner; ++k) {
            num = std::max(num, aRow[k].num + b[k * cols + j].num);
          }
        }
        const bool polynomial = line.polynomial && column.polynomial;
        o = DegreeValue{num, polynomial ? 0 : line.den + column.den, o.key,
                        polynomial ? 1 : line.denKey * column.denKey, line.traits | column.traits};
      }
    }
  });
}

}  // namespace mugraph::verify::kernels
