#include "verify/finite_field.h"

#include <array>
#include <cmath>
#include <vector>

namespace mugraph::verify::field {
namespace {

uint64_t powMod(uint64_t base, uint64_t exponent, uint64_t m) {
  uint64_t result = 1 % m;
  base %= m;
  while (exponent > 0) {
    if (exponent & 1) result = static_cast<uint64_t>((Uint128)result * base % m);
    base = static_cast<uint64_t>((Uint128)base * base % m);
    exponent >>= 1;
  }
  return result;
}

// ω^e = low[e mod 2^16] · high[e / 2^16]: two table lookups and one multiplication.
struct OmegaTables {
  std::vector<uint32_t> low, high;
  OmegaTables() : low(1 << 16), high(1 << 16) {
    const uint64_t p = FieldParameters::p;
    const uint64_t step = powMod(FieldParameters::omega, 1 << 16, p);
    uint64_t l = 1, h = 1;
    for (size_t i = 0; i < low.size(); ++i) {
      low[i] = static_cast<uint32_t>(l);
      high[i] = static_cast<uint32_t>(h);
      l = l * FieldParameters::omega % p;
      h = h * step % p;
    }
  }
};

const OmegaTables& omegaTables() {
  static const OmegaTables tables;
  return tables;
}

uint32_t inverseMod(uint32_t value, uint64_t m) {
  // Division is frequent with a broadcast divisor (a softmax denominator is reused across a
  // row), so remember the last one per thread.
  thread_local uint32_t lastValue[2] = {0, 0};
  thread_local uint32_t lastInverse[2] = {0, 0};
  const int slot = m == FieldParameters::p ? 0 : 1;
  if (value == lastValue[slot] && value != 0) return lastInverse[slot];
  const uint32_t inverse = static_cast<uint32_t>(powMod(value, m - 2, m));
  lastValue[slot] = value;
  lastInverse[slot] = inverse;
  return inverse;
}

uint32_t residue(long double magnitude, uint64_t m) {
  // magnitude is a non-negative integer below 2^64 here.
  return static_cast<uint32_t>(static_cast<uint64_t>(magnitude) % m);
}

}  // namespace

uint32_t inverseModP(uint32_t a) {
  return inverseMod(a, FieldParameters::p);
}
uint32_t inverseModQ(uint32_t b) {
  return inverseMod(b, FieldParameters::q);
}

uint32_t omegaPower(uint32_t exponent) {
  const OmegaTables& t = omegaTables();
  return mulModP(t.low[exponent & 0xFFFF], t.high[exponent >> 16]);
}

FieldElement fromRational(double c) {
  if (!std::isfinite(c)) throw OutsideFieldFragment("non-finite constant in a fingerprint");
  if (c == 0.0) return FieldElement{0, 0};
  // c = mantissa · 2^exponent with an integer mantissa of at most 53 bits.
  int exponent = 0;
  const double fraction = std::frexp(std::fabs(c), &exponent);
  const long double mantissa = std::ldexp(static_cast<long double>(fraction), 53);
  exponent -= 53;
  FieldElement result;
  for (int part = 0; part < 2; ++part) {
    const uint64_t m = part == 0 ? FieldParameters::p : FieldParameters::q;
    uint64_t value = residue(mantissa, m);
    const uint64_t power = powMod(2, static_cast<uint64_t>(std::abs(exponent)), m);
    value = exponent >= 0 ? value * power % m : value * powMod(power, m - 2, m) % m;
    if (c < 0) value = (m - value) % m;
    (part == 0 ? result.a : result.b) = static_cast<uint32_t>(value);
  }
  return result;
}

}  // namespace mugraph::verify::field
