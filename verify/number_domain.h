// The number domains the interpreter runs over. NumberDomain<T> is the one customization
// point: a new domain (the finite field of verify/finite_field.h) specializes it and the
// interpreter's code is reused unchanged.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "graph/ops.h"

namespace mugraph::verify {

// What the ops without an algebraic meaning mean in one evaluation. Over doubles they are the
// real functions and this is ignored. Over the finite field (verify/README.md) everything is
// drawn from `key`, fixed for a trial so both graphs of a trial agree: max selects its larger
// operand by a random total order, or, with `arbitraryMax`, returns a random function of its
// operands (which lets a check ask whether the outputs depend on what max returns at all);
// each uninterpreted op (graph/ops.h: sqrt, silu, sigmoid) is a random function of its argument,
// one per op kind.
class ArgumentTally;
struct TrialMeaning {
  uint64_t key = 0;
  bool arbitraryMax = false;
  // Mixed into max's key alone: two meanings that differ only here give max two independent
  // random functions and everything else the same (a probe of whether outputs depend on max).
  uint64_t maxSalt = 0;
  // Where the degree domain counts the random-function applications of the evaluation by
  // their arguments' degrees (degree_domain.h); the other domains ignore it.
  ArgumentTally* arguments = nullptr;
};

// The real function of an op that the finite field leaves uninterpreted (OpInfo::uninterpreted).
inline double realFunction(graph::OpKind kind, double x) {
  switch (kind) {
    case graph::OpKind::Sqrt:
      return std::sqrt(x);
    case graph::OpKind::Silu:
      return x / (1.0 + std::exp(-x));
    case graph::OpKind::Sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case graph::OpKind::Tanh:
      return std::tanh(x);
    case graph::OpKind::Erf:
      return std::erf(x);
    case graph::OpKind::Relu:
      return x > 0 ? x : 0.0;
    default:
      throw std::logic_error("no real function for op '" + std::string(graph::opName(kind)) + "'");
  }
}

template <class T>
struct NumberDomain;

template <>
struct NumberDomain<double> {
  static double zero() { return 0.0; }
  static double constant(double c) { return c; }
  static double negInf() { return -HUGE_VAL; }  // what causal_mask writes above the diagonal
  static double add(double a, double b) { return a + b; }
  static double sub(double a, double b) { return a - b; }
  static double mul(double a, double b) { return a * b; }
  static double div(double a, double b) { return a / b; }
  static double exp(double a, const TrialMeaning&) { return std::exp(a); }
  static double uninterpreted(graph::OpKind kind, double a, const TrialMeaning&) {
    return realFunction(kind, a);
  }
  static double max(double a, double b, const TrialMeaning&) { return std::max(a, b); }
  // sum over k of a[k * strideA] * b[k * strideB]; domains override this for speed.
  static double dot(const double* a, int64_t strideA, const double* b, int64_t strideB, int64_t n) {
    double sum = 0.0;
    for (int64_t k = 0; k < n; ++k) sum += a[k * strideA] * b[k * strideB];
    return sum;
  }
};

}  // namespace mugraph::verify
