// The blocked matmul kernels (verify/matmul_kernels.h) compute exactly what NumberDomain::dot
// defines, bit for bit: kernel by kernel on random operands of awkward shapes (both
// instruction sets), and through the whole interpreter on random programs and on the shipped
// schedules, against the same interpreter run over a domain that has no kernel and so takes
// dot for every output element.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>

#include "graph/builder.h"
#include "graph/files.h"
#include "tests/verify/test_support.h"
#include "verify/degree_domain.h"
#include "verify/fingerprint.h"
#include "verify/interpreter_impl.h"
#include "verify/matmul_kernels.h"
#include "verify/random_inputs.h"

namespace mugraph::verify {

// A number domain that is T in every respect but has no blocked kernel, so the interpreter
// evaluates each matmul output by NumberDomain<T>::dot: the reference for the kernels.
template <class T>
struct ViaDot {
  T v;
};

template <class T>
struct NumberDomain<ViaDot<T>> {
  using D = NumberDomain<T>;
  using W = ViaDot<T>;
  static W zero() { return {D::zero()}; }
  static W constant(double c) { return {D::constant(c)}; }
  static W negInf() { return {D::negInf()}; }
  static W add(const W& x, const W& y) { return {D::add(x.v, y.v)}; }
  static W sub(const W& x, const W& y) { return {D::sub(x.v, y.v)}; }
  static W mul(const W& x, const W& y) { return {D::mul(x.v, y.v)}; }
  static W div(const W& x, const W& y) { return {D::div(x.v, y.v)}; }
  static W exp(const W& x, const TrialMeaning& m) { return {D::exp(x.v, m)}; }
  static W uninterpreted(graph::OpKind kind, const W& x, const TrialMeaning& m) {
    return {D::uninterpreted(kind, x.v, m)};
  }
  static W max(const W& x, const W& y, const TrialMeaning& m) { return {D::max(x.v, y.v, m)}; }
  static W dot(const W* x, int64_t strideX, const W* y, int64_t strideY, int64_t n) {
    thread_local std::vector<T> xs, ys;
    xs.resize(static_cast<size_t>(n));
    ys.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      xs[k] = x[k * strideX].v;
      ys[k] = y[k * strideY].v;
    }
    return {D::dot(xs.data(), 1, ys.data(), 1, n)};
  }
};

namespace {

using testing::freshSeed;
using testing::seedTrace;

bool sameBits(const double& x, const double& y) {
  return std::memcmp(&x, &y, sizeof x) == 0;
}
bool sameBits(const FieldElement& x, const FieldElement& y) {
  return x == y;
}
bool sameBits(const DegreeValue& x, const DegreeValue& y) {
  return x.num == y.num && x.den == y.den && x.key == y.key && x.denKey == y.denKey &&
         x.traits == y.traits;
}

// Random operands per domain; `special` adds the cases the kernels treat apart: -0.0 and
// zeros, values without a q-part (after exp), degree values that are not polynomial.
double randomValue(std::mt19937_64& g, bool special, double) {
  if (special && g() % 4 == 0) return g() % 2 ? -0.0 : 0.0;
  return std::uniform_real_distribution<double>(-1, 1)(g) * std::ldexp(1.0, g() % 40 - 20);
}
FieldElement randomValue(std::mt19937_64& g, bool special, FieldElement) {
  FieldElement x{static_cast<uint32_t>(g() % FieldParameters::p),
                 static_cast<uint32_t>(g() % FieldParameters::q)};
  if (g() % 8 == 0) x = {FieldParameters::p - 1, FieldParameters::q - 1};
  if (special && g() % 16 == 0) x.b = FieldElement::kNoQPart;
  return x;
}
DegreeValue randomValue(std::mt19937_64& g, bool special, DegreeValue) {
  const int32_t num = g() % 4 == 0 ? static_cast<int32_t>(g() % 5) - 1 : 1;
  const int32_t den = special && g() % 32 == 0 ? 1 : 0;
  return DegreeValue{num, den, g(), den ? g() : 1, static_cast<uint32_t>(g() % 8 == 0 ? g() : 0)};
}

template <class T>
void expectKernelMatchesDot(uint64_t seed) {
  std::mt19937_64 g(seed);
  const int64_t sizes[] = {1, 3, 4, 5, 47, 129, 300};
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t rows = sizes[g() % 7], inner = sizes[g() % 7], cols = sizes[g() % 7];
    // Rows of one repeated value (equal degrees, all with q-parts) and random rows.
    const bool special = g() % 2 == 0;
    std::vector<T> a(static_cast<size_t>(rows * inner)), b(static_cast<size_t>(inner * cols));
    for (int64_t i = 0; i < rows; ++i) {
      const bool repeated = g() % 2 == 0;
      const T first = randomValue(g, special, T{});
      for (int64_t k = 0; k < inner; ++k) {
        a[i * inner + k] = repeated ? first : randomValue(g, special, T{});
      }
    }
    for (T& x : b) x = randomValue(g, special, T{});
    for (kernels::Isa isa :
         {kernels::Isa::Portable, kernels::Isa::Avx2, kernels::Isa::Avx512Ifma}) {
      if (!kernels::supported(isa)) continue;
      SCOPED_TRACE("shape " + std::to_string(rows) + "x" + std::to_string(inner) + "x" +
                   std::to_string(cols) + ", instruction set " +
                   std::to_string(static_cast<int>(isa)));
      std::vector<T> out(static_cast<size_t>(rows * cols));
      kernels::matmul(a.data(), b.data(), out.data(), rows, inner, cols, isa);
      int64_t differ = 0;
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
          const T want = NumberDomain<T>::dot(a.data() + i * inner, 1, b.data() + j, cols, inner);
          differ += !sameBits(out[i * cols + j], want);
        }
      }
      EXPECT_EQ(differ, 0);
    }
  }
}

TEST(MatmulKernels, DoubleKernelIsBitIdenticalToDot) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  expectKernelMatchesDot<double>(seed);
}

TEST(MatmulKernels, FieldKernelIsBitIdenticalToDot) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  expectKernelMatchesDot<FieldElement>(seed);
}

TEST(MatmulKernels, DegreeKernelIsBitIdenticalToDot) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  expectKernelMatchesDot<DegreeValue>(seed);
}

template <class T>
TensorMap<ViaDot<T>> wrap(const TensorMap<T>& values) {
  TensorMap<ViaDot<T>> out;
  for (const auto& [name, t] : values) {
    HostTensor<ViaDot<T>>& w = out[name];
    w.shape = t.shape;
    for (const T& x : t.data) w.data.push_back({x});
  }
  return out;
}

template <class T>
int64_t differingElements(const TensorMap<T>& fast, const TensorMap<ViaDot<T>>& reference) {
  int64_t differ = 0;
  for (const auto& [name, want] : reference) {
    const HostTensor<T>& got = fast.at(name);
    if (got.data.size() != want.data.size()) return -1;
    for (size_t i = 0; i < got.data.size(); ++i) differ += !sameBits(got.data[i], want.data[i].v);
  }
  return differ;
}

TensorMap<DegreeValue> degreeInputs(const graph::KernelGraph& g, uint64_t seed) {
  std::mt19937_64 generator(seed);
  TensorMap<DegreeValue> inputs;
  for (graph::TensorId id : g.inputs) {
    HostTensor<DegreeValue>& t = inputs[g.tensors[id].name];
    t.shape = g.tensors[id].shape;
    t.data.resize(static_cast<size_t>(graph::elementCount(t.shape)));
    for (DegreeValue& v : t.data) v = DegreeValue{1, 0, generator() | 1, 1};
  }
  return inputs;
}

// `graph` evaluated over all three domains, with and without the kernels.
void expectSameEvaluations(const graph::KernelGraph& graph, uint64_t seed) {
  const TensorMap<double> real = randomInputs(graph, seed);
  EXPECT_EQ(differingElements(evaluate(graph, real), evaluate(graph, wrap(real))), 0) << "double";
  const TensorMap<FieldElement> field = randomFieldInputs(graph, seed);
  for (bool arbitraryMax : {false, true}) {
    const TrialMeaning meaning = trialMeaning(seed, arbitraryMax);
    EXPECT_EQ(
        differingElements(evaluate(graph, field, meaning), evaluate(graph, wrap(field), meaning)),
        0)
        << "finite field";
  }
  const TensorMap<DegreeValue> degrees = degreeInputs(graph, seed);
  EXPECT_EQ(differingElements(evaluate(graph, degrees), evaluate(graph, wrap(degrees))), 0)
      << "degree domain";
}

// A random chain of batched matmuls, with exp, division and a softmax-like normalization in
// between, so operands come without q-parts and as fractions.
graph::Program randomProgram(std::mt19937_64& g) {
  graph::GraphBuilder builder("random");
  const int64_t batch = 1 + g() % 3, m = 1 + g() % 70, k = 1 + g() % 300, n = 1 + g() % 140;
  const int64_t width = 1 + g() % 20;
  const auto x = builder.input("X", graph::DType::F32, {batch, m, k});
  const auto w = builder.input("W", graph::DType::F32, {batch, k, n});
  const auto v = builder.input("V", graph::DType::F32, {batch, n, width});
  graph::TensorId h = builder.op(graph::OpKind::Matmul, {x, w}, {}, "h");
  if (g() % 2) h = builder.op(graph::OpKind::Exp, {h}, {}, "e");
  if (g() % 2) {
    graph::OpAttrs sum;
    sum.dim = 2;
    sum.to = 1;
    const graph::TensorId s = builder.op(graph::OpKind::ReduceSum, {h}, sum, "s");
    h = builder.op(graph::OpKind::Div, {h, s}, {}, "p");
  }
  builder.output(builder.op(graph::OpKind::Matmul, {h, v}, {}, "out"));
  return builder.finish();
}

TEST(MatmulKernels, RandomProgramsEvaluateIdenticallyWithAndWithoutKernels) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  std::mt19937_64 g(seed);
  for (int i = 0; i < 8; ++i) expectSameEvaluations(randomProgram(g), seed + i);
}

// Multiply-adds of a graph's matmuls at the kernel level (the program's work).
double matmulWork(const graph::Program& program) {
  double work = 0;
  for (const graph::KernelOp& op : program.ops) {
    if (op.kind != graph::OpKind::Matmul) continue;
    work += static_cast<double>(graph::elementCount(program.tensors[op.outputs[0]].shape)) *
            static_cast<double>(program.tensors[op.inputs[0]].shape.back());
  }
  return work;
}

// The reference path takes dot per element (minutes at 2^36 multiply-adds): larger schedules
// only with MUGRAPH_CHECK_LARGE_SCHEDULES, as in shipped_schedules_test.cpp. At 5e7 every
// kernel path (layouts, batches, split parts) is still compared on the decode schedules of
// 1k-5k keys (and every size from 1 row up by the kernel tests above); the three above it
// (the 8k and 12345-key decodes, the 1-row matmul at 5.9e7, whose reference alone took 31 s)
// took 49 of the test's 62 s on 2 cores.
constexpr double kMaxComparedWork = 5e7;

TEST(MatmulKernels, ShippedSchedulesEvaluateIdenticallyWithAndWithoutKernels) {
  const uint64_t seed = freshSeed();
  SCOPED_TRACE(seedTrace(seed));
  const std::filesystem::path root = std::filesystem::path(MUGRAPH_SOURCE_DIR) / "schedules";
  int compared = 0;
  for (const std::filesystem::path& folder : {root, root / "found"}) {
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
      if (entry.path().extension() != ".json") continue;
      SCOPED_TRACE(entry.path().string());
      const graph::Schedule s = graph::loadSchedule(entry.path().string());
      if (matmulWork(s.program) > kMaxComparedWork &&
          !std::getenv("MUGRAPH_CHECK_LARGE_SCHEDULES")) {
        continue;
      }
      expectSameEvaluations(s.graph, seed);
      expectSameEvaluations(s.program, seed);
      ++compared;
    }
  }
  std::cout << "[matmul kernels] " << compared << " schedules compared\n";
  EXPECT_GE(compared, 7);
}

}  // namespace
}  // namespace mugraph::verify
