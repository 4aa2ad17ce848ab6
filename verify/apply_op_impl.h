// The compute ops on host tensors, written once over NumberDomain<T> so the same code runs on
// doubles and on finite-field fingerprints. Every output element is computed by one thread in
// a fixed order, so results are bit-identical for any number of threads.
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>

#include "graph/error.h"
#include "verify/evaluation_plan.h"
#include "verify/interpreter.h"
#include "verify/matmul_kernels.h"

namespace mugraph::verify::detail {

// Below this many element operations a loop stays on the calling thread.
inline constexpr int64_t kParallelWork = int64_t{1} << 15;

// Runs body(begin, end) over [0, count), in parallel chunks when the work is large.
template <class Body>
void forChunks(int64_t count, int64_t workPerItem, const Body& body) {
  const int64_t work = count * std::max<int64_t>(workPerItem, 1);
  if (count < 2 || work < kParallelWork) {
    body(int64_t{0}, count);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kParallelWork / std::max<int64_t>(workPerItem, 1));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, count, static_cast<size_t>(grain)),
                    [&](const tbb::blocked_range<int64_t>& r) { body(r.begin(), r.end()); });
}

template <class T>
HostTensor<T> filled(const graph::Dims& shape, const T& value) {
  return HostTensor<T>{shape,
                       std::vector<T>(static_cast<size_t>(graph::elementCount(shape)), value)};
}

// Batched matmul: each output element is NumberDomain<T>::dot of a row of a and a column of b.
// Domains with a blocked kernel (matmul_kernels.h, proven identical to dot by the tests) get it
// per batch (it splits rows over threads itself); any other domain gets dot itself.
template <class T>
void matmul(const HostTensor<T>& a, const HostTensor<T>& b, HostTensor<T>& out) {
  using Domain = NumberDomain<T>;
  const size_t rank = a.shape.size();
  const int64_t rows = a.shape[rank - 2];
  const int64_t inner = a.shape[rank - 1];
  const int64_t cols = b.shape[rank - 1];
  const int64_t batches = graph::elementCount(a.shape) / (rows * inner);
  const T* aData = a.data.data();
  const T* bData = b.data.data();
  T* outData = out.data.data();
  if constexpr (requires { kernels::matmul(aData, bData, outData, rows, inner, cols); }) {
    forChunks(batches, rows * inner * cols, [&](int64_t begin, int64_t end) {
      for (int64_t batch = begin; batch < end; ++batch) {
        kernels::matmul(aData + batch * rows * inner, bData + batch * inner * cols,
                        outData + batch * rows * cols, rows, inner, cols);
      }
    });
  } else {
    forChunks(batches * rows, inner * cols, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const T* bBatch = bData + (row / rows) * inner * cols;
        for (int64_t n = 0; n < cols; ++n) {
          outData[row * cols + n] = Domain::dot(aData + row * inner, 1, bBatch + n, cols, inner);
        }
      }
    });
  }
}

template <class T>
void unary(graph::OpKind kind, const graph::OpAttrs& attrs, const TrialMeaning& meaning,
           const HostTensor<T>& x, HostTensor<T>& out) {
  using Domain = NumberDomain<T>;
  const T* in = x.data.data();
  T* result = out.data.data();
  const auto apply = [&](auto&& f) {
    forChunks(static_cast<int64_t>(x.data.size()), 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) result[i] = f(in[i]);
    });
  };
  if (graph::opInfo(kind).uninterpreted) {
    return apply([&](const T& v) { return Domain::uninterpreted(kind, v, meaning); });
  }
  switch (kind) {
    case graph::OpKind::Exp:
      return apply([&](const T& v) { return Domain::exp(v, meaning); });
    case graph::OpKind::Square:
      return apply([](const T& v) { return Domain::mul(v, v); });
    case graph::OpKind::Scale: {
      const T c = Domain::constant(attrs.scale);
      return apply([&c](const T& v) { return Domain::mul(v, c); });
    }
    case graph::OpKind::AddScalar: {
      const T c = Domain::constant(attrs.scale);
      return apply([&c](const T& v) { return Domain::add(v, c); });
    }
    default:
      throw UserError(std::string(graph::opName(kind)), "is not a unary op");
  }
}

// causal_mask (graph/ops.h): the elements above the causal diagonal become -inf. `frame` places
// x's last two dims in the whole tensor.
template <class T>
void causalMask(const HostTensor<T>& x, const graph::OpAttrs& attrs, const MaskFrame& frame,
                HostTensor<T>& out) {
  const size_t rank = x.shape.size();
  const int64_t tileRows = x.shape[rank - 2];
  const int64_t tileCols = x.shape[rank - 1];
  const int64_t rows = frame.rows > 0 ? frame.rows : tileRows;
  const int64_t cols = frame.cols > 0 ? frame.cols : tileCols;
  const int64_t queries = attrs.queries > 0 ? attrs.queries : rows;
  if (rows % queries != 0 || cols < queries) {
    throw UserError("causal_mask", "needs queries=" + std::to_string(queries) + " to divide the " +
                                       std::to_string(rows) + " rows and at most the " +
                                       std::to_string(cols) + " keys");
  }
  const T masked = NumberDomain<T>::negInf();
  const int64_t matrices = static_cast<int64_t>(x.data.size()) / (tileRows * tileCols);
  forChunks(matrices * tileRows, tileCols, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t row = frame.row + r % tileRows;
      for (int64_t c = 0; c < tileCols; ++c) {
        const size_t at = static_cast<size_t>(r * tileCols + c);
        out.data[at] =
            graph::causallyKept(row, frame.col + c, rows, cols, queries) ? x.data[at] : masked;
      }
    }
  });
}

// Element-wise binary op; a size-1 dim of either operand broadcasts (stride 0).
template <class T>
void binary(graph::OpKind kind, const HostTensor<T>& a, const HostTensor<T>& b,
            HostTensor<T>& out) {
  using Domain = NumberDomain<T>;
  const Shape4 shape = paddedShape(out.shape);
  Shape4 sa = paddedShape(a.shape);
  Shape4 sb = paddedShape(b.shape);
  for (int d = 0; d < graph::kMaxRank; ++d) {
    if (sa.extent[d] == 1) sa.stride[d] = 0;
    if (sb.extent[d] == 1) sb.stride[d] = 0;
  }
  const int64_t width = shape.extent[3];
  const int64_t rowCount = shape.extent[0] * shape.extent[1] * shape.extent[2];
  const auto apply = [&](auto&& f) {
    forChunks(rowCount, width, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t i2 = row % shape.extent[2];
        const int64_t i1 = (row / shape.extent[2]) % shape.extent[1];
        const int64_t i0 = row / (shape.extent[2] * shape.extent[1]);
        const T* pa = a.data.data() + i0 * sa.stride[0] + i1 * sa.stride[1] + i2 * sa.stride[2];
        const T* pb = b.data.data() + i0 * sb.stride[0] + i1 * sb.stride[1] + i2 * sb.stride[2];
        T* po = out.data.data() + row * width;
        for (int64_t i3 = 0; i3 < width; ++i3)
          po[i3] = f(pa[i3 * sa.stride[3]], pb[i3 * sb.stride[3]]);
      }
    });
  };
  switch (kind) {
    case graph::OpKind::Add:
      return apply([](const T& x, const T& y) { return Domain::add(x, y); });
    case graph::OpKind::Sub:
      return apply([](const T& x, const T& y) { return Domain::sub(x, y); });
    case graph::OpKind::Mul:
      return apply([](const T& x, const T& y) { return Domain::mul(x, y); });
    case graph::OpKind::Div:
      return apply([](const T& x, const T& y) { return Domain::div(x, y); });
    default:
      throw UserError(std::string(graph::opName(kind)), "is not a binary op");
  }
}

// A tensor viewed as [outer, n, inner] around the reduced dim.
struct ReductionView {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};

inline ReductionView reductionView(const graph::Dims& shape, int dim) {
  ReductionView view;
  for (int d = 0; d < dim; ++d) view.outer *= shape[d];
  view.n = shape[dim];
  for (size_t d = dim + 1; d < shape.size(); ++d) view.inner *= shape[d];
  return view;
}

// reduce_sum(dim, to=k): out[o, j, i] = sum over g of in[o, g*k + j, i], g ascending.
template <class T>
void reduceSum(const HostTensor<T>& x, int dim, int64_t to, HostTensor<T>& out) {
  using Domain = NumberDomain<T>;
  const ReductionView v = reductionView(x.shape, dim);
  const int64_t groups = v.n / to;
  const int64_t outSlice = to * v.inner;
  forChunks(v.outer, v.n * v.inner, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      T* acc = out.data.data() + o * outSlice;
      std::fill(acc, acc + outSlice, Domain::zero());
      for (int64_t g = 0; g < groups; ++g) {
        const T* part = x.data.data() + o * v.n * v.inner + g * outSlice;
        for (int64_t e = 0; e < outSlice; ++e) acc[e] = Domain::add(acc[e], part[e]);
      }
    }
  });
}

template <class T>
void reduceMax(const HostTensor<T>& x, int dim, const TrialMeaning& meaning, HostTensor<T>& out) {
  using Domain = NumberDomain<T>;
  const ReductionView v = reductionView(x.shape, dim);
  forChunks(v.outer, v.n * v.inner, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      T* acc = out.data.data() + o * v.inner;
      const T* slab = x.data.data() + o * v.n * v.inner;
      std::copy(slab, slab + v.inner, acc);
      for (int64_t g = 1; g < v.n; ++g) {
        for (int64_t i = 0; i < v.inner; ++i)
          acc[i] = Domain::max(acc[i], slab[g * v.inner + i], meaning);
      }
    }
  });
}

// rms_norm(dim): y = x / sqrt(sum over dim of x^2 * (1/n)), no epsilon. Over the finite field
// it is this very composite of field ops with sqrt uninterpreted.
template <class T>
void rmsNorm(const HostTensor<T>& x, int dim, const TrialMeaning& meaning, HostTensor<T>& out) {
  using Domain = NumberDomain<T>;
  const ReductionView v = reductionView(x.shape, dim);
  const T inverseCount = Domain::constant(1.0 / static_cast<double>(v.n));
  forChunks(v.outer, v.n * v.inner, [&](int64_t begin, int64_t end) {
    std::vector<T> root(static_cast<size_t>(v.inner));
    for (int64_t o = begin; o < end; ++o) {
      const T* slab = x.data.data() + o * v.n * v.inner;
      T* result = out.data.data() + o * v.n * v.inner;
      std::fill(root.begin(), root.end(), Domain::zero());
      for (int64_t g = 0; g < v.n; ++g) {
        for (int64_t i = 0; i < v.inner; ++i) {
          const T& e = slab[g * v.inner + i];
          root[i] = Domain::add(root[i], Domain::mul(e, e));
        }
      }
      for (T& r : root) {
        r = Domain::uninterpreted(graph::OpKind::Sqrt, Domain::mul(r, inverseCount), meaning);
      }
      for (int64_t g = 0; g < v.n; ++g) {
        for (int64_t i = 0; i < v.inner; ++i) {
          result[g * v.inner + i] = Domain::div(slab[g * v.inner + i], root[i]);
        }
      }
    }
  });
}

// rotate_half(dim), RoPE's rotation of a row of n = 2h lanes:
//   y[j] = -x[j + h] for j < h,  y[j] = x[j - h] for j >= h.
// A permutation with signs: exact in every domain.
template <class T>
void rotateHalf(const HostTensor<T>& x, int dim, HostTensor<T>& out) {
  using Domain = NumberDomain<T>;
  const ReductionView v = reductionView(x.shape, dim);
  const int64_t half = v.n / 2;
  forChunks(v.outer, v.n * v.inner, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const T* slab = x.data.data() + o * v.n * v.inner;
      T* result = out.data.data() + o * v.n * v.inner;
      for (int64_t j = 0; j < v.n; ++j) {
        const bool first = j < half;
        const T* from = slab + (first ? j + half : j - half) * v.inner;
        for (int64_t i = 0; i < v.inner; ++i) {
          result[j * v.inner + i] = first ? Domain::sub(Domain::zero(), from[i]) : from[i];
        }
      }
    }
  });
}

// rotate_pairs(dim), interleaved RoPE's rotation of a row of n = 2h lanes, pairs (2i, 2i+1):
//   y[2i] = -x[2i + 1],  y[2i + 1] = x[2i].
// Like rotate_half, a permutation with signs: exact in every domain.
template <class T>
void rotatePairs(const HostTensor<T>& x, int dim, HostTensor<T>& out) {
  using Domain = NumberDomain<T>;
  const ReductionView v = reductionView(x.shape, dim);
  forChunks(v.outer, v.n * v.inner, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const T* slab = x.data.data() + o * v.n * v.inner;
      T* result = out.data.data() + o * v.n * v.inner;
      for (int64_t j = 0; j < v.n; ++j) {
        const bool even = j % 2 == 0;
        const T* from = slab + (j ^ 1) * v.inner;
        for (int64_t i = 0; i < v.inner; ++i) {
          result[j * v.inner + i] = even ? Domain::sub(Domain::zero(), from[i]) : from[i];
        }
      }
    }
  });
}

}  // namespace mugraph::verify::detail

namespace mugraph::verify {

template <class T>
HostTensor<T> applyOp(graph::OpKind kind, const graph::OpAttrs& attrs,
                      const std::vector<const HostTensor<T>*>& operands,
                      const TrialMeaning& meaning, const MaskFrame& frame) {
  const std::string opText(graph::opName(kind));
  const graph::OpClass opClass = graph::opInfo(kind).opClass;
  if (opClass == graph::OpClass::Io || opClass == graph::OpClass::Accumulator ||
      opClass == graph::OpClass::BlockGraph) {
    throw UserError(opText, "is not an op on host tensors");
  }
  std::vector<const graph::Dims*> shapes;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i]) throw UserError(opText, "operand " + std::to_string(i) + " is missing");
    checkTensorData(operands[i]->shape, operands[i]->data.size(),
                    opText + " operand " + std::to_string(i));
    shapes.push_back(&operands[i]->shape);
  }
  HostTensor<T> out =
      detail::filled(computeResultShape(kind, attrs, shapes), NumberDomain<T>::zero());
  switch (opClass) {
    case graph::OpClass::Matmul:
      detail::matmul(*operands[0], *operands[1], out);
      break;
    case graph::OpClass::Unary:
      if (kind == graph::OpKind::CausalMask) {
        detail::causalMask(*operands[0], attrs, frame, out);
      } else {
        detail::unary(kind, attrs, meaning, *operands[0], out);
      }
      break;
    case graph::OpClass::Binary:
      detail::binary(kind, *operands[0], *operands[1], out);
      break;
    default:
      if (kind == graph::OpKind::ReduceSum) {
        detail::reduceSum(*operands[0], attrs.dim, attrs.to, out);
      } else if (kind == graph::OpKind::ReduceMax) {
        detail::reduceMax(*operands[0], attrs.dim, meaning, out);
      } else if (kind == graph::OpKind::RotateHalf) {
        detail::rotateHalf(*operands[0], attrs.dim, out);
      } else if (kind == graph::OpKind::RotatePairs) {
        detail::rotatePairs(*operands[0], attrs.dim, out);
      } else {
        detail::rmsNorm(*operands[0], attrs.dim, meaning, out);
      }
  }
  return out;
}

}  // namespace mugraph::verify
