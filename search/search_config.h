// The search space, described as data: how many kernels and block ops a candidate may have,
// which grid sizes, thread counts and for-loop trip counts are tried, which program rewrites
// are allowed, and the target whose plans decide what fits (plan/target.h). Defaults depend on the
// kind of program (attention-like, GEMM-like, norm+matmul); every field can be overridden.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "plan/target.h"

namespace mugraph::search {

enum class ProgramKind { Attention, Gemm, NormMatmul, Other };
const char* programKindName(ProgramKind kind);
// Attention: a matmul fed by exp (directly or through other ops); norm+matmul: a matmul fed
// by rms_norm; GEMM: matmuls only.
ProgramKind classifyProgram(const graph::Program& program);

// The most element-wise ops a GEMM's epilogue takes past maxBlockOps by default
// (SearchConfig::maxEpilogueOps): a bias and GELU's tanh form are ten.
inline constexpr int kMostEpilogueOps = 16;

struct SearchConfig {
  const plan::Target* target = &plan::targetByName(plan::kDefaultTarget);
  int maxKernels = 4;            // kernel ops in a candidate (predefined ops included)
  int maxBlockGraphKernels = 2;  // of which block-graph kernels
  int maxBlockOps = 8;           // program ops fused into one block graph
  // Element-wise ops after a matmul the warpgroup GEMM sketch may take as its epilogue past
  // maxBlockOps (sketches.h: lastGemmEpilogueOp).
  int maxEpilogueOps = kMostEpilogueOps;
  int64_t maxGridBlocks = 1024;  // blocks per kernel
  int64_t minGridBlocks = 1;
  // Grid counts per mapped dim: powers of two dividing the dim, n/t for power-of-two tiles t
  // that divide it with a count no power of two reaches (172 tiles of 64 for 11008), and ⌈n/t⌉
  // for those that do not divide it (partial tiles), at most maxGridPerDim.
  int64_t maxGridPerDim = 1024;
  // A dim that a matmul reads as its M, N or K is never tiled below this (tensor-core shape).
  int64_t minMatmulTile = 16;
  // Where no power of two divides a dim, it is cut into power-of-two tiles at least this long
  // with a partial last one (matmul dims: minMatmulTile).
  int64_t minPartialTile = 16;
  std::vector<int> threadCandidates = {128};
  // Thread counts kept only for block graphs the target's plan puts on the warpgroup path
  // (a copy warpgroup and multiplying ones, plan/kernel_plan.h): elsewhere they only slow
  // the general path down, so those block graphs are pruned.
  std::vector<int> warpgroupOnlyThreads;
  std::vector<int64_t> forloopCandidates = {1, 2, 4, 8, 16, 32, 64};
  bool allowGridSplitReduction = true;  // split a reduction dim across the grid + combine
  // Search a program beyond one candidate's reach in pieces and join them (split_program.h);
  // false: whole-program candidates only.
  bool splitLargePrograms = true;
  // Also search the program with each value several matmuls read as their left operand
  // computed once per matmul (program_rewrites.h, recomputedPrologues), and rank both forms'
  // variants together.
  bool recomputePrologues = true;
  // Rewritten forms compute a value two rewrites emit alike once (program_rewrites.h); false
  // where the program computes values more than once on purpose (the recomputed form).
  bool mergeEqualOps = true;
  // Add the known-fast families' block choices (sketches.h) to the generic ones.
  bool sketches = true;
  // Of the children of a partial schedule that leave the same future, the cheapest this many
  // are explored (enumerate_kernel_graphs.h: the rest are dominated); <= 0: all (attention).
  int childrenPerFuture = 2;
  int maxRewriteForms = 8;  // program forms reached by the rewrite table
  int maxVariants = 32;     // best candidates verified at real shapes and reported
  int candidatePool = 128;  // best candidates kept (by cost, then hash)
};

SearchConfig defaultConfig(ProgramKind kind);

}  // namespace mugraph::search
