// The finite-field number domain used for fingerprints. A value is a pair (a mod p, b mod q)
// with q prime and q | p - 1: arithmetic is component-wise, and exp maps the q-part b to
// ω^b mod p, where ω has order q, so exp(x + y) = exp(x) · exp(y) holds exactly in the field.
// The result of exp has no q-part; exp of such a value is a per-trial random function of its
// argument's p-part, every op with no algebraic meaning (sqrt, silu, sigmoid) one of its
// argument's whole pair, and max selects by a random order of p-parts (verify/README.md).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "verify/number_domain.h"

namespace mugraph::verify {

// 128-bit accumulators for exact modular dot products (a GCC/Clang extension).
__extension__ typedef unsigned __int128 Uint128;

// q is a Sophie Germain prime just below 2^31 and p = 2q + 1 < 2^32, so a product of two
// residues fits in 64 bits and a dot product accumulates exactly in 128 bits.
struct FieldParameters {
  static constexpr uint64_t p = 4294967087ULL;  // prime
  static constexpr uint64_t q = 2147483543ULL;  // prime, p = 2q + 1
  static constexpr uint64_t omega = 25;         // 5 generates Z_p^*, so 5^2 has order q
};

struct FieldElement {
  static constexpr uint32_t kNoQPart = 0xFFFFFFFFu;  // the q-part after an exp (⊥)
  // -inf, what causal_mask writes above the diagonal: no residue (a < p < 2^32 - 1).
  static constexpr uint32_t kNegInf = 0xFFFFFFFFu;
  uint32_t a = 0;  // value mod p, or kNegInf
  uint32_t b = 0;  // value mod q, or kNoQPart

  bool hasQPart() const { return b != kNoQPart; }
  bool isNegInf() const { return a == kNegInf; }
  bool operator==(const FieldElement&) const = default;
};

// A division by zero: the trial's inputs hit a pole and the trial is drawn again.
class ZeroDivisorInTrial : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The computation leaves what fingerprints can check (a constant that is not finite).
class OutsideFieldFragment : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace field {

uint32_t inverseModP(uint32_t a);        // a != 0
uint32_t inverseModQ(uint32_t b);        // b != 0
uint32_t omegaPower(uint32_t exponent);  // ω^exponent mod p, exponent < q (table lookup)
FieldElement fromRational(double c);     // the exact dyadic rational c, in both parts

inline uint32_t mulModP(uint32_t x, uint32_t y) {
  return static_cast<uint32_t>(uint64_t{x} * y % FieldParameters::p);
}
inline uint32_t mulModQ(uint32_t x, uint32_t y) {
  return static_cast<uint32_t>(uint64_t{x} * y % FieldParameters::q);
}
inline uint32_t addMod(uint32_t x, uint32_t y, uint64_t m) {
  const uint64_t s = uint64_t{x} + y;
  return static_cast<uint32_t>(s >= m ? s - m : s);
}
inline uint32_t subMod(uint32_t x, uint32_t y, uint64_t m) {
  return static_cast<uint32_t>(x >= y ? x - y : uint64_t{x} + m - y);
}

// Splitmix64's finalizer, a bijection of 64-bit words.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Rank of a value in the order of `key`, from its p-part alone: equal real values agree on
// the p-part whether or not they still carry a q-part (an exp drops it), so they rank alike;
// distinct p-parts rank apart (mix64 is a bijection). Distinct values sharing a p-part tie, an
// event the false-accept bound pays for (verify/README.md).
inline uint64_t orderRank(FieldElement v, uint64_t key) {
  return mix64(uint64_t{v.a} ^ key);
}

// The field pair a random 64-bit word stands for.
inline FieldElement pairFromWord(uint64_t h) {
  return FieldElement{static_cast<uint32_t>(h % FieldParameters::p),
                      static_cast<uint32_t>((h >> 32) % FieldParameters::q)};
}

// A value drawn from the p-parts of (x, y) and `key` alone: equal arguments give equal
// results, with or without their q-parts.
inline FieldElement randomFunction(FieldElement x, FieldElement y, uint64_t key) {
  return pairFromWord(mix64(orderRank(x, key) ^ mix64(orderRank(y, ~key))));
}

// A value drawn from x's p-part and `key` alone: equal arguments give equal results, with or
// without their q-parts, and distinct p-parts distinct words (orderRank and mix64 are
// injective) before the word is reduced to a pair.
inline FieldElement randomFunction(FieldElement x, uint64_t key) {
  return pairFromWord(mix64(orderRank(x, key)));
}

// The word a random function of a whole value keys on: its p-part and its q-part (or ⊥),
// injectively (a < 2^32; b < q, or kNoQPart, which no residue mod q equals).
inline uint64_t pairWord(FieldElement x) { return (uint64_t{x.a} << 32) | x.b; }

// A value drawn from x's whole pair and `key`: equal values give equal results, distinct pairs
// distinct words (pairWord and mix64 are injective) before the word is reduced to a pair. Two
// distinct arguments that both carry a q-part collide only where both parts agree, at
// independent points (verify/README.md, "The false-accept bound"); a value without a q-part
// keys apart from every value with one.
inline FieldElement randomFunctionOfPair(FieldElement x, uint64_t key) {
  return pairFromWord(mix64(pairWord(x) ^ key));
}

// The key of op `kind`'s random function in the trial of `trialKey`: one function per kind.
inline uint64_t functionKey(uint64_t trialKey, graph::OpKind kind) {
  return mix64(trialKey ^ mix64(0x756e696e74657270ULL + static_cast<uint64_t>(kind)));
}

}  // namespace field

template <>
struct NumberDomain<FieldElement> {
  using F = FieldElement;
  static constexpr uint64_t p = FieldParameters::p;
  static constexpr uint64_t q = FieldParameters::q;

  static F zero() { return F{0, 0}; }
  static F constant(double c) { return field::fromRational(c); }
  // -inf absorbs the arithmetic around it (-inf - m, -inf · c for the positive scales a
  // softmax applies), exp takes it to 0 and max ranks it below every value: exactly what a
  // masked score does in a safe softmax, so schedules that skip masked tiles agree with ones
  // that compute them (verify/README.md).
  static F negInf() { return F{F::kNegInf, F::kNoQPart}; }
  static F add(F x, F y) {
    if (x.isNegInf() || y.isNegInf()) return negInf();
    const bool qPart = x.hasQPart() && y.hasQPart();
    return F{field::addMod(x.a, y.a, p), qPart ? field::addMod(x.b, y.b, q) : F::kNoQPart};
  }
  static F sub(F x, F y) {
    if (x.isNegInf() || y.isNegInf()) return negInf();
    const bool qPart = x.hasQPart() && y.hasQPart();
    return F{field::subMod(x.a, y.a, p), qPart ? field::subMod(x.b, y.b, q) : F::kNoQPart};
  }
  static F mul(F x, F y) {
    if (x.isNegInf() || y.isNegInf()) return negInf();
    const bool qPart = x.hasQPart() && y.hasQPart();
    return F{field::mulModP(x.a, y.a), qPart ? field::mulModQ(x.b, y.b) : F::kNoQPart};
  }
  static F div(F x, F y) {
    if (x.isNegInf() || y.isNegInf()) return negInf();
    if (y.a == 0 || y.b == 0) throw ZeroDivisorInTrial("division by zero in a fingerprint trial");
    const bool qPart = x.hasQPart() && y.hasQPart();
    return F{field::mulModP(x.a, field::inverseModP(y.a)),
             qPart ? field::mulModQ(x.b, field::inverseModQ(y.b)) : F::kNoQPart};
  }
  // ω^b, a homomorphism on values with a q-part. A value without one (it went through exp)
  // has no exponent to raise ω to: its exp is the p-part of a random function of it, so equal
  // arguments still agree, but exp(x + y) = exp(x)·exp(y) is not honoured for such values.
  static F exp(F x, const TrialMeaning& meaning) {
    if (x.isNegInf()) return F{0, F::kNoQPart};
    if (!x.hasQPart()) {
      return F{field::randomFunction(x, field::functionKey(meaning.key, graph::OpKind::Exp)).a,
               F::kNoQPart};
    }
    return F{field::omegaPower(x.b), F::kNoQPart};
  }
  // An op with no algebraic meaning (sqrt, silu, ...): a random function of the whole value
  // (both parts, or the p-part and ⊥), one per op kind and trial. Consistent (equal arguments,
  // equal results), so schedules that apply it to algebraically equal arguments computed
  // alike agree; no identity of the real function holds. Keying on both parts makes two
  // distinct arguments collide only where both parts agree: (2d/p)·(2d/q) per pair instead of
  // 2d/p, what takes the bound of an LLM MLP (millions of silu values) below 1. The price: a
  // value and the same value recomputed through exp (X and X·exp(Y)/exp(Y), no q-part) are
  // different arguments, so such a pair of graphs is refuted, never wrongly accepted.
  static F uninterpreted(graph::OpKind kind, F x, const TrialMeaning& meaning) {
    return field::randomFunctionOfPair(x, field::functionKey(meaning.key, kind));
  }
  // Selection by the trial's random order of p-parts: the operand of larger rank. Operands
  // with one p-part (the same value, one of them without q-part, or distinct values that
  // collide) give that p-part, with the q-part only where both carry the same one. Selection
  // is associative, commutative and idempotent like max (a total order of p-parts, and within
  // one p-part a semilattice), so a max split over blocks or iterations selects exactly what
  // the whole max does. With `arbitraryMax`, a random function of the ordered pair of p-parts
  // instead (see TrialMeaning).
  static F max(F x, F y, const TrialMeaning& meaning) {
    if (x.isNegInf()) return y;
    if (y.isNegInf()) return x;
    if (meaning.arbitraryMax) return field::randomFunction(x, y, meaning.key ^ meaning.maxSalt);
    const uint64_t rankX = field::orderRank(x, meaning.key);
    const uint64_t rankY = field::orderRank(y, meaning.key);
    if (rankX != rankY) return rankX > rankY ? x : y;
    return F{x.a, x.b == y.b ? x.b : F::kNoQPart};
  }
  // Exact: products of residues below 2^32 fit in 64 bits, and up to 2^64 of them in 128.
  static F dot(const F* x, int64_t strideX, const F* y, int64_t strideY, int64_t n) {
    Uint128 sumA = 0;
    Uint128 sumB = 0;
    bool qPart = true;
    for (int64_t k = 0; k < n; ++k) {
      const F& u = x[k * strideX];
      const F& v = y[k * strideY];
      sumA += uint64_t{u.a} * v.a;
      qPart = qPart && u.hasQPart() && v.hasQPart();
      sumB += uint64_t{u.b} * v.b;
    }
    return F{static_cast<uint32_t>(sumA % p),
             qPart ? static_cast<uint32_t>(sumB % q) : F::kNoQPart};
  }
};

}  // namespace mugraph::verify
