// A number domain that computes degrees instead of values: running the interpreter over it
// gives, for every output element, the degree of its numerator and denominator as a rational
// function of the inputs (and of exp values and random-function values, each counted as one
// fresh variable), and the largest degree of the arguments those random functions were
// applied to. The false-accept bound of a fingerprint test is computed from these
// (false_accept_bound.h), so the degree follows the schedule's real semantics through the
// one interpreter.
#pragma once

#include <tbb/enumerable_thread_specific.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "verify/finite_field.h"
#include "verify/number_domain.h"

namespace mugraph::verify {

// `key` evaluates the value in Z/2^64 at random points (sums and products are exact there),
// so two values with equal keys are, with overwhelming likelihood, the same rational
// function; it lets a sum of fractions over one shared denominator keep that denominator's
// degree instead of multiplying denominators.
//
// The random functions' arguments matter to the bound because two distinct arguments that
// collide in a trial get equal values: `traits` records, over the random-function
// applications a value depends on, the degree (numerator + denominator) of each argument,
// split by whether the argument's two parts are independent evaluations of it in the field.
// They are unless it depends on exp (then it has no q-part) or on a max (whose selection
// couples them). It records the degrees of max's operands too: max ranks them by their
// p-parts, so two distinct operands that collide tie. Traits combine by OR, which keeps the
// interpreter's inner loops cheap.
struct DegreeValue {
  int32_t num = 0;      // degree of the numerator; -1 for the zero polynomial
  int32_t den = 0;      // degree of the denominator (0: none)
  uint64_t key = 0;     // the value's key
  uint64_t denKey = 1;  // the denominator's key (1: none)
  uint64_t traits = 0;  // degree::traits bits
};

// The bits of DegreeValue::traits. An argument of degree d sets the bit of its class c, the
// least with d <= 2^c, in one of three groups of kClasses bits; the top class stands for any
// degree above 2^(kClasses - 2), which the bound treats as unbounded.
namespace degree::traits {
inline constexpr int kClasses = 15;
// Where each group's bits start.
enum class Group : int {
  kBothParts = 0,          // random-function arguments whose two parts are independent
  kPPartAlone = kClasses,  // random-function arguments whose p-part alone is free
  kMaxOperand = 32,        // max's operands
};
inline constexpr uint64_t kAfterExp = uint64_t{1} << 30;  // depends on exp: no q-part in the field
inline constexpr uint64_t kAfterMax = uint64_t{1} << 31;  // depends on a max
inline constexpr int64_t kUnbounded = INT32_MAX;

inline uint64_t argument(int64_t degree, Group group) {
  int c = 0;
  while (c < kClasses - 1 && (int64_t{1} << c) < degree) ++c;
  return uint64_t{1} << (c + static_cast<int>(group));
}

// The largest argument degree the bits of one group allow (-1: no argument).
inline int64_t largestArgument(uint64_t bits, Group group) {
  const uint64_t classes = (bits >> static_cast<int>(group)) & ((uint64_t{1} << kClasses) - 1);
  if (classes == 0) return -1;
  const int c = 63 - __builtin_clzll(classes);
  return c == kClasses - 1 ? kUnbounded : int64_t{1} << c;
}
}  // namespace degree::traits

// How many random-function applications of one or more evaluations had an argument whose two
// field parts are independent evaluations of it, by the argument's degree (numerator plus
// denominator): degrees below kExact each apart, larger ones together with the largest of them.
// The collision term of the false-accept bound sums over pairs of such applications with each
// pair's own larger degree (false_accept_bound.h), where one largest degree for all of them
// overstates an LLM layer's: millions of silu values of low degree beside a few square roots
// of the residual stream's higher one.
struct ArgumentCounts {
  static constexpr int kExact = 64;
  std::array<int64_t, kExact + 1> byDegree{};  // [kExact]: degrees of kExact or more
  int64_t largest = 0;                         // the largest of those

  void add(int64_t degree) {
    if (degree < kExact) {
      ++byDegree[static_cast<size_t>(std::max<int64_t>(degree, 0))];
      return;
    }
    ++byDegree[kExact];
    largest = std::max(largest, degree);
  }
  ArgumentCounts& operator+=(const ArgumentCounts& o) {
    for (size_t d = 0; d < byDegree.size(); ++d) byDegree[d] += o.byDegree[d];
    largest = std::max(largest, o.largest);
    return *this;
  }
};

// The counts an evaluation over the degree domain makes through TrialMeaning::arguments, one
// per thread the interpreter runs on, summed once it is done.
class ArgumentTally {
 public:
  void add(int64_t degree) { local_.local().add(degree); }
  ArgumentCounts counts() const {
    ArgumentCounts total;
    for (const ArgumentCounts& c : local_) total += c;
    return total;
  }

 private:
  tbb::enumerable_thread_specific<ArgumentCounts> local_;
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

// `v` with the traits of x and y.
inline DegreeValue inherit(DegreeValue v, const DegreeValue& x, const DegreeValue& y) {
  v.traits = x.traits | y.traits;
  return v;
}

inline DegreeValue addLike(const DegreeValue& x, const DegreeValue& y, uint64_t key) {
  if (x.num < 0) return inherit(DegreeValue{y.num, y.den, key, y.denKey}, x, y);
  if (y.num < 0) return inherit(DegreeValue{x.num, x.den, key, x.denKey}, x, y);
  if (x.denKey == y.denKey) {
    return inherit(DegreeValue{std::max(x.num, y.num), x.den, key, x.denKey}, x, y);
  }
  return inherit(
      DegreeValue{std::max(x.num + y.den, y.num + x.den), x.den + y.den, key, x.denKey * y.denKey},
      x, y);
}

// x's degree (numerator plus denominator) as an argument of `group`.
inline uint64_t argumentOf(const DegreeValue& x, traits::Group group) {
  return traits::argument(std::max(x.num, 0) + x.den, group);
}

// Whether a random function of x keys on both of its field parts: not after exp (no q-part)
// or a max (whose selection couples them).
inline bool keysOnBothParts(const DegreeValue& x) {
  return (x.traits & (traits::kAfterExp | traits::kAfterMax)) == 0;
}

// A fresh variable of degree 1 standing for a random function's value at x, keyed by x and
// `tag` (the function); it remembers x's degree as an argument.
inline DegreeValue randomFunctionValue(const DegreeValue& x, uint64_t tag, bool afterExp) {
  using namespace traits;
  const bool pPartAlone = !keysOnBothParts(x);
  const uint64_t kept = x.traits & ~(kAfterExp | kAfterMax);
  return DegreeValue{1, 0, mix(x.key + tag), 1,
                     kept | argumentOf(x, pPartAlone ? Group::kPPartAlone : Group::kBothParts) |
                         (afterExp ? kAfterExp : 0)};
}

}  // namespace degree

template <>
struct NumberDomain<DegreeValue> {
  using D = DegreeValue;
  static D zero() { return D{-1, 0, 0, 1}; }
  // -inf is a constant: it adds no degree (exp of it is 0 in the field).
  static D negInf() { return constant(-1.0); }
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
    if (x.num < 0 || y.num < 0) return degree::inherit(zero(), x, y);
    return degree::inherit(D{x.num + y.num, x.den + y.den, x.key * y.key, x.denKey * y.denKey}, x,
                           y);
  }
  static D div(const D& x, const D& y) {
    if (y.num < 0) throw ZeroDivisorInTrial("division by the zero polynomial");
    if (x.num < 0) return degree::inherit(zero(), x, y);
    const uint64_t denKey = x.denKey * degree::numeratorKey(y);
    return degree::inherit(
        D{x.num + y.den, x.den + y.num, degree::mix(x.key * 0x9e3779b97f4a7c15ULL + y.key), denKey},
        x, y);
  }
  // exp(x) is one new variable: degree 1, keyed by its argument. For an x without a q-part
  // the field's exp is a random function of x, so x counts as a random-function argument.
  static D exp(const D& x, const TrialMeaning&) {
    constexpr uint64_t kTag = 0x6578700000000000ULL;
    if (x.traits & degree::traits::kAfterExp) return degree::randomFunctionValue(x, kTag, true);
    return D{1, 0, degree::mix(x.key + kTag), 1, x.traits | degree::traits::kAfterExp};
  }
  // A random function's value (finite_field.h): one fresh variable of degree 1.
  // Counted in `meaning.arguments` where its argument keeps both parts.
  static D uninterpreted(graph::OpKind kind, const D& x, const TrialMeaning& meaning) {
    if (meaning.arguments && degree::keysOnBothParts(x)) {
      meaning.arguments->add(int64_t{std::max(x.num, 0)} + x.den);
    }
    return degree::randomFunctionValue(x, degree::mix(static_cast<uint64_t>(kind) + 1), false);
  }
  // The field's max returns one of its operands (or, on a tie, their shared p-part), or
  // (arbitrary) a fresh value: either way its degree is at most the larger operand's, and at
  // least that of one fresh variable. The operands' degrees bound the chance of a tie.
  static D max(const D& x, const D& y, const TrialMeaning&) {
    using degree::traits::Group;
    const uint64_t denKey = x.denKey == y.denKey ? x.denKey : degree::mix(x.denKey ^ y.denKey);
    D v =
        degree::inherit(D{std::max({1, x.num, y.num}), std::max(x.den, y.den),
                          degree::mix(x.key ^ degree::mix(y.key + 0x6d61780000000000ULL)), denKey},
                        x, y);
    v.traits |= degree::traits::kAfterMax | degree::argumentOf(x, Group::kMaxOperand) |
                degree::argumentOf(y, Group::kMaxOperand);
    return v;
  }
  static D dot(const D* x, int64_t strideX, const D* y, int64_t strideY, int64_t n) {
    // Fast path for the common case of polynomial operands (no denominators, none zero).
    int32_t num = -1;
    uint64_t key = 0;
    uint64_t traits = 0;
    bool polynomial = true;
    for (int64_t k = 0; k < n && polynomial; ++k) {
      const D& u = x[k * strideX];
      const D& v = y[k * strideY];
      polynomial = u.den == 0 && v.den == 0 && u.num >= 0 && v.num >= 0;
      num = std::max(num, u.num + v.num);
      key += u.key * v.key;
      traits |= u.traits | v.traits;
    }
    if (polynomial) return n > 0 ? D{num, 0, key, 1, traits} : zero();
    D sum = zero();
    for (int64_t k = 0; k < n; ++k) sum = add(sum, mul(x[k * strideX], y[k * strideY]));
    return sum;
  }
};

}  // namespace mugraph::verify
