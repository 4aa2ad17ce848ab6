// Blocked matmul kernels for the interpreter's number domains: the fast evaluation of the
// inner products that NumberDomain<T>::dot defines. out = a · b for one batch, a [rows × inner]
// and b [inner × cols] row-major, computed in parallel over chunks of rows (oneTBB).
//
// Why they exist: a fingerprint check of a 4096³ GEMM evaluates twelve such products (float
// tests, degree analysis, field trials), and one dot per output element streams all of b from
// memory once per row. These kernels tile rows and columns into registers and pack b into
// cache-sized panels.
//
// Why they are not a second semantics: each computes exactly dot's value, element for element.
//   - double: each output adds its products a[i][k]·b[k][j] to +0.0 in ascending k, one
//     rounding per multiply and per add, as dot does (no fused multiply-add: the build keeps
//     floating-point contraction off), so the results are bit-identical.
//   - finite field: residues are exact whatever the order of the additions.
//   - degree domain: keys are sums of products in Z/2^64 (order-free), the degree is a max of
//     sums and the traits an OR, both over k; an output whose row or column is not polynomial
//     is computed by dot itself.
// tests/verify/matmul_kernels_test.cpp checks every kernel against dot on random operands.
#pragma once

#include <cstdint>

#include "verify/degree_domain.h"
#include "verify/finite_field.h"

namespace mugraph::verify::kernels {

// The instruction set a kernel runs on: `portable` is the blocking with scalar arithmetic,
// AVX2 vectorizes it, and AVX-512 IFMA (52-bit multiply-adds) runs the finite field's kernel
// (the other domains use AVX2 there). bestIsa() is the widest the CPU supports; tests run
// every supported one.
enum class Isa { Portable, Avx2, Avx512Ifma };
bool supported(Isa isa);
Isa bestIsa();

void matmul(const double* a, const double* b, double* out, int64_t rows, int64_t inner,
            int64_t cols, Isa isa = bestIsa());
void matmul(const FieldElement* a, const FieldElement* b, FieldElement* out, int64_t rows,
            int64_t inner, int64_t cols, Isa isa = bestIsa());
void matmul(const DegreeValue* a, const DegreeValue* b, DegreeValue* out, int64_t rows,
            int64_t inner, int64_t cols, Isa isa = bestIsa());

}  // namespace mugraph::verify::kernels
