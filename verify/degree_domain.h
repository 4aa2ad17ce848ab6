// A number domain that computes degrees instead of values: running the interpreter over it
// gives, for every output element, the degree of its numerator and denominator as a rational
// function of the inputs (and of exp values, each counted as one fresh variable). The
// false-accept bound of a fingerprint test is computed from these (see equivalence.h), so
// the degree follows the schedule's real semantics through the one interpreter.
#pragma once

#include <algorithm>
#include <cstdint>

#include "verify/finite_field.h"
#include "verify/number_domain.h"

namespace mugraph::verify {

// `key` evaluates the value in Z/2^64 at random points (sums and products are exact there),
// so two values with equal keys are, with overwhelming likelihood, the same rational
// function; it lets a sum of fractions over one shared denominator keep that denominator's
// degree instead of multiplying denominators.
struct DegreeValue {
  int32_t num = 0;      // degree of the numerator; -1 for the zero polynomial
  int32_t den = 0;      // degree of the denominator (0: none)
  uint64_t key = 0;     // the value's key
  uint64_t denKey = 1;  // the denominator's key (1: none)
};

namespace degree {

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

// Key of a value's numerator when its denominator is not trivial.
inline uint64_t numeratorKey(const DegreeValue& v) {
  return v.den == 0 ? v.key : mix(v.key ^ 0x6e756d65726174ULL);
}

inline DegreeValue addLike(const DegreeValue& x, const DegreeValue& y, uint64_t key) {
  if (x.num < 0) return DegreeValue{y.num, y.den, key, y.denKey};
  if (y.num < 0) return DegreeValue{x.num, x.den, key, x.denKey};
  if (x.denKey == y.denKey) return DegreeValue{std::max(x.num, y.num), x.den, key, x.denKey};
  return DegreeValue{std::max(x.num + y.den, y.num + x.den), x.den + y.den, key,
                     x.denKey * y.denKey};
}

}  // namespace degree

template <>
struct NumberDomain<DegreeValue> {
  using D = DegreeValue;
  static D zero() { return D{-1, 0, 0, 1}; }
  static D constant(double c) {
    if (c == 0.0) return zero();
    uint64_t bits;
    static_assert(sizeof bits == sizeof c);
    __builtin_memcpy(&bits, &c, sizeof bits);
    return D{0, 0, degree::mix(bits), 1};
  }
  static D add(const D& x, const D& y) { return degree::addLike(x, y, x.key + y.key); }
  static D sub(const D& x, const D& y) { return degree::addLike(x, y, x.key - y.key); }
  static D mul(const D& x, const D& y) {
    if (x.num < 0 || y.num < 0) return zero();
    return D{x.num + y.num, x.den + y.den, x.key * y.key, x.denKey * y.denKey};
  }
  static D div(const D& x, const D& y) {
    if (y.num < 0) throw ZeroDivisorInTrial("division by the zero polynomial");
    if (x.num < 0) return zero();
    const uint64_t denKey = x.denKey * degree::numeratorKey(y);
    return D{x.num + y.den, x.den + y.num, degree::mix(x.key * 0x9e3779b97f4a7c15ULL + y.key),
             denKey};
  }
  // exp(x) is one new variable: degree 1, keyed by its argument.
  static D exp(const D& x) { return D{1, 0, degree::mix(x.key + 0x6578700000000000ULL), 1}; }
  [[noreturn]] static D sqrt(const D&) { throw OutsideFieldFragment("sqrt has no degree"); }
  [[noreturn]] static D silu(const D&) { throw OutsideFieldFragment("silu has no degree"); }
  // The field's max returns one of its operands, or (arbitrary) a fresh value: either way its
  // degree is at most the larger operand's, and at least that of one fresh variable.
  static D max(const D& x, const D& y, const MaxMeaning&) {
    const uint64_t denKey = x.denKey == y.denKey ? x.denKey : degree::mix(x.denKey ^ y.denKey);
    return D{std::max({1, x.num, y.num}), std::max(x.den, y.den),
             degree::mix(x.key ^ degree::mix(y.key + 0x6d61780000000000ULL)), denKey};
  }
  static D dot(const D* x, int64_t strideX, const D* y, int64_t strideY, int64_t n) {
    // Fast path for the common case of polynomial operands (no denominators, none zero).
    int32_t num = -1;
    uint64_t key = 0;
    bool polynomial = true;
    for (int64_t k = 0; k < n && polynomial; ++k) {
      const D& u = x[k * strideX];
      const D& v = y[k * strideY];
      polynomial = u.den == 0 && v.den == 0 && u.num >= 0 && v.num >= 0;
      num = std::max(num, u.num + v.num);
      key += u.key * v.key;
    }
    if (polynomial) return n > 0 ? D{num, 0, key, 1} : zero();
    D sum = zero();
    for (int64_t k = 0; k < n; ++k) sum = add(sum, mul(x[k * strideX], y[k * strideY]));
    return sum;
  }
};

}  // namespace mugraph::verify
