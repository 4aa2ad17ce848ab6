#include "search/search_config.h"

#include <set>

#include "graph/error.h"

namespace mugraph::search {

const char* programKindName(ProgramKind kind) {
  switch (kind) {
    case ProgramKind::Attention:
      return "attention";
    case ProgramKind::Gemm:
      return "gemm";
    case ProgramKind::NormMatmul:
      return "norm+matmul";
    case ProgramKind::Other:
      break;
  }
  return "other";
}

ProgramKind classifyProgram(const graph::Program& program) {
  bool matmulAfterExp = false, hasNorm = false, onlyMatmul = true;
  // The tensors computed from an exp (program ops are in topological order). An exp no matmul
  // reads, even through other ops, is element-wise work like any other (a GEMM's exp
  // epilogue): given attention's space it took 26 s to search instead of 1.
  std::set<graph::TensorId> afterExp;
  for (const graph::KernelOp& op : program.ops) {
    bool readsExp = op.kind == graph::OpKind::Exp;
    for (graph::TensorId t : op.inputs) readsExp = readsExp || afterExp.count(t) > 0;
    if (op.kind == graph::OpKind::Matmul && readsExp) matmulAfterExp = true;
    if (readsExp) afterExp.insert(op.outputs.begin(), op.outputs.end());
    hasNorm = hasNorm || op.kind == graph::OpKind::RmsNorm;
    onlyMatmul = onlyMatmul && op.kind == graph::OpKind::Matmul;
  }
  if (matmulAfterExp) return ProgramKind::Attention;
  if (hasNorm) return ProgramKind::NormMatmul;
  if (onlyMatmul) return ProgramKind::Gemm;
  return ProgramKind::Other;
}

SearchConfig defaultConfig(ProgramKind kind) {
  SearchConfig config;
  switch (kind) {
    case ProgramKind::Attention:
      // Up to six kernels so the unfused program itself (one predefined op per statement)
      // stays in the space; at most two of them are block graphs (partial + combine).
      config.maxKernels = 6;
      config.maxBlockGraphKernels = 2;
      config.maxVariants = 32;
      // Every variant, dominated or not: the limits keep the space small, and attention's
      // classes are what datasets and --profile rank by measurement.
      config.childrenPerFuture = 4;
      // The whole attention in one block graph: Q·K, its scale, a mask (causal_mask or an added
      // bias), max, shift, exp, sum, P·V and the division are nine ops; a soft cap or a norm
      // adds more.
      config.maxBlockOps = 12;
      break;
    case ProgramKind::Gemm:
      config.maxKernels = 2;
      // 384: a copy warpgroup and two multiplying ones on the sm_90 warpgroup path.
      config.threadCandidates = {128, 256, 384};
      config.warpgroupOnlyThreads = {384};
      config.minMatmulTile = 32;
      config.maxVariants = 16;
      config.candidatePool = 64;
      break;
    case ProgramKind::NormMatmul:
      config.maxKernels = 4;
      // A norm before a gated MLP in one block graph: rms_norm's statistics applied after both
      // matmuls (program_rewrites.h), silu and the product are ten ops.
      config.maxBlockOps = 12;
      config.maxVariants = 16;
      config.candidatePool = 64;
      break;
    case ProgramKind::Other:
      // Model subgraphs (norms written out in primitive ops feeding projections, MLPs): 256
      // threads halve what each thread of a row-wise norm or a small GEMM tile does.
      config.threadCandidates = {128, 256};
      // A LayerNorm written out is eleven ops (mean, centre, square, mean, epsilon, root,
      // divide, scale, shift) and the residual add before it a twelfth: one row-wise kernel.
      config.maxBlockOps = 12;
      break;
  }
  return config;
}

}  // namespace mugraph::search
