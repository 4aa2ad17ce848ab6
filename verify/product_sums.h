// The integer core of the finite field's and the degree domain's blocked matmul: sums, over k,
// of products of 32-bit parts of a[i][k] and b[k][j], accumulated in 64-bit lanes. A domain
// says how an element splits into parts and how the sums make its result (matmul_kernels.cpp);
// this file tiles rows and columns into registers and packs b into cache-sized panels.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "verify/matmul_kernels.h"

namespace mugraph::verify::kernels::detail {

inline constexpr int64_t kPanelCols = 128;   // columns of b packed together
inline constexpr int64_t kPanelDepth = 256;  // products summed before a domain combines them

// What the micro-kernel needs of a domain (Policy):
//   kRows: rows of a register tile; kParts: 32-bit parts of an element of a; kLanes: columns
//   per register (4 with AVX2 or portable code, 8 with kIfma, the AVX-512 IFMA kernel);
//   kHighOf[s]: whether part s multiplies the high (else the low) 32 bits of b's 64-bit word;
//   aParts(x, parts): the 32-bit parts of x; bWord(y): y's 64-bit word;
//   combine(sums, out, first): folds one panel's sums (one per part, exact mod 2^64) into out.
template <class Policy>
using PartSums = std::array<uint64_t, Policy::kParts>;

// One register tile: sums[r][s][lane] = Σ_k aPack[k][r][s] · half_s(bPack[k][lane]).
template <class Policy>
void microPortable(const uint32_t* aPack, const uint64_t* bPack, int64_t depth,
                   uint64_t (&sums)[Policy::kRows][Policy::kParts][Policy::kLanes]) {
  constexpr int R = Policy::kRows, S = Policy::kParts, kLanes = Policy::kLanes;
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < S; ++s)
      for (int l = 0; l < kLanes; ++l) sums[r][s][l] = 0;
  for (int64_t k = 0; k < depth; ++k) {
    const uint64_t* w = bPack + k * kLanes;
    for (int r = 0; r < R; ++r) {
      for (int s = 0; s < S; ++s) {
        const uint64_t x = aPack[(k * R + r) * S + s];  // widened before the product
        for (int l = 0; l < kLanes; ++l) {
          const uint64_t half = Policy::kHighOf[s] ? w[l] >> 32 : w[l] & 0xFFFFFFFFu;
          sums[r][s][l] += x * half;
        }
      }
    }
  }
}

template <class Policy>
__attribute__((target("avx2"))) void microAvx2(
    const uint32_t* aPack, const uint64_t* bPack, int64_t depth,
    uint64_t (&sums)[Policy::kRows][Policy::kParts][Policy::kLanes]) {
  constexpr int R = Policy::kRows, S = Policy::kParts, kLanes = Policy::kLanes;
  static_assert(kLanes == 4);
  __m256i acc[R][S];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s) acc[r][s] = _mm256_setzero_si256();
  for (int64_t k = 0; k < depth; ++k) {
    const __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bPack + k * kLanes));
    const __m256i high = _mm256_srli_epi64(low, 32);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (int s = 0; s < S; ++s) {
        // vpmuludq multiplies the low 32 bits of each 64-bit lane: a part broadcast to every
        // 32-bit slot, and the word's low half as it is.
        const __m256i x = _mm256_set1_epi32(static_cast<int>(aPack[(k * R + r) * S + s]));
        acc[r][s] =
            _mm256_add_epi64(acc[r][s], _mm256_mul_epu32(x, Policy::kHighOf[s] ? high : low));
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums[r][s]), acc[r][s]);
}

// The same tile with AVX-512 IFMA, eight lanes: part s even adds the low 52 bits of each
// product, part s odd its bits 52 and up (products of two 32-bit values: below 2^64).
template <class Policy>
__attribute__((target("avx512f,avx512ifma"))) void microAvx512Ifma(
    const uint32_t* aPack, const uint64_t* bPack, int64_t depth,
    uint64_t (&sums)[Policy::kRows][Policy::kParts][Policy::kLanes]) {
  constexpr int R = Policy::kRows, S = Policy::kParts, kLanes = Policy::kLanes;
  static_assert(kLanes == 8);
  __m512i acc[R][S];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s) acc[r][s] = _mm512_setzero_si512();
  const __m512i lowMask = _mm512_set1_epi64(0xFFFFFFFF);
  for (int64_t k = 0; k < depth; ++k) {
    const __m512i word = _mm512_loadu_si512(bPack + k * kLanes);
    const __m512i low = _mm512_and_si512(word, lowMask);
    // maskz: GCC 12 warns about the undefined source of the unmasked form.
    const __m512i high = _mm512_maskz_srli_epi64(0xFF, word, 32);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (int s = 0; s < S; ++s) {
        const __m512i x = _mm512_set1_epi64(aPack[(k * R + r) * S + s]);
        const __m512i y = Policy::kHighOf[s] ? high : low;
        acc[r][s] = s % 2 == 0 ? _mm512_madd52lo_epu64(acc[r][s], x, y)
                               : _mm512_madd52hi_epu64(acc[r][s], x, y);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s) _mm512_storeu_si512(sums[r][s], acc[r][s]);
}

// out = a · b as Policy defines it, for one batch (a [rows × inner], b [inner × cols]).
template <class Policy>
void blockedProductSums(const typename Policy::Element* a, const typename Policy::Element* b,
                        typename Policy::Element* out, int64_t rows, int64_t inner, int64_t cols,
                        Isa isa) {
  constexpr int R = Policy::kRows, S = Policy::kParts, kLanes = Policy::kLanes;
  std::vector<uint64_t> bPack(static_cast<size_t>(kPanelCols * kPanelDepth));
  std::vector<uint32_t> aPack(static_cast<size_t>(kPanelDepth * R * S));
  uint64_t sums[R][S][kLanes];
  for (int64_t j0 = 0; j0 < cols; j0 += kPanelCols) {
    const int64_t width = std::min(kPanelCols, cols - j0);
    const int64_t groups = (width + kLanes - 1) / kLanes;
    for (int64_t k0 = 0; k0 < inner; k0 += kPanelDepth) {
      const int64_t depth = std::min(kPanelDepth, inner - k0);
      // b's panel as column groups of kLanes, each [depth][kLanes], zero past the last column.
      for (int64_t g = 0; g < groups; ++g) {
        uint64_t* to = bPack.data() + g * depth * kLanes;
        for (int64_t k = 0; k < depth; ++k) {
          const typename Policy::Element* row = b + (k0 + k) * cols + j0 + g * kLanes;
          for (int l = 0; l < kLanes; ++l) {
            to[k * kLanes + l] = g * kLanes + l < width ? Policy::bWord(row[l]) : 0;
          }
        }
      }
      for (int64_t i0 = 0; i0 < rows; i0 += R) {
        const int64_t tileRows = std::min<int64_t>(R, rows - i0);
        for (int64_t k = 0; k < depth; ++k) {
          for (int r = 0; r < R; ++r) {
            uint32_t* parts = aPack.data() + (k * R + r) * S;
            if (r < tileRows) {
              Policy::aParts(a[(i0 + r) * inner + k0 + k], parts);
            } else {
              std::fill(parts, parts + S, 0);
            }
          }
        }
        for (int64_t g = 0; g < groups; ++g) {
          const uint64_t* panel = bPack.data() + g * depth * kLanes;
          if constexpr (Policy::kIfma) {
            microAvx512Ifma<Policy>(aPack.data(), panel, depth, sums);
          } else if (isa == Isa::Avx2) {
            microAvx2<Policy>(aPack.data(), panel, depth, sums);
          } else {
            microPortable<Policy>(aPack.data(), panel, depth, sums);
          }
          const int64_t lanes = std::min<int64_t>(kLanes, width - g * kLanes);
          for (int r = 0; r < tileRows; ++r) {
            for (int64_t l = 0; l < lanes; ++l) {
              PartSums<Policy> partSums;
              for (int s = 0; s < S; ++s) partSums[s] = sums[r][s][l];
              Policy::combine(partSums, out[(i0 + r) * cols + j0 + g * kLanes + l], k0 == 0);
            }
          }
        }
      }
    }
  }
}

}  // namespace mugraph::verify::kernels::detail
