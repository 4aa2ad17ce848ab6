// The number domains the interpreter runs over. NumberDomain<T> is the one customization
// point: a new domain (the finite field of verify/finite_field.h) specializes it and the
// interpreter's code is reused unchanged.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mugraph::verify {

// What reduce_max and accum_max mean in one evaluation. Over doubles max is the real max and
// this is ignored. Over the finite field (verify/README.md, "max") max selects its larger
// operand by a total order drawn from `key` (fixed for a trial, so both graphs of a trial
// agree); with `arbitrary` it instead returns a random function of its operands, which lets
// a check ask whether the outputs depend on what max returns at all.
struct MaxMeaning {
  uint64_t key = 0;
  bool arbitrary = false;
};

template <class T>
struct NumberDomain;

template <>
struct NumberDomain<double> {
  static double zero() { return 0.0; }
  static double constant(double c) { return c; }
  static double add(double a, double b) { return a + b; }
  static double sub(double a, double b) { return a - b; }
  static double mul(double a, double b) { return a * b; }
  static double div(double a, double b) { return a / b; }
  static double exp(double a) { return std::exp(a); }
  static double sqrt(double a) { return std::sqrt(a); }
  static double silu(double a) { return a / (1.0 + std::exp(-a)); }
  static double max(double a, double b, const MaxMeaning&) { return std::max(a, b); }
  // sum over k of a[k * strideA] * b[k * strideB]; domains override this for speed.
  static double dot(const double* a, int64_t strideA, const double* b, int64_t strideB,
                    int64_t n) {
    double sum = 0.0;
    for (int64_t k = 0; k < n; ++k) sum += a[k * strideA] * b[k * strideB];
    return sum;
  }
};

}  // namespace mugraph::verify
