// Safe attention (the row max subtracted before exp) in the search space: for prefill and
// decode shapes the space holds the one-pass online-softmax kernel (running max, rescaled
// sums, FlashAttention) and split-KV partials written with their max and combined by a
// rescaling combine (FlashDecoding); the search verifies both at the finite-field level.
#include <gtest/gtest.h>

#include "graph/program_text.h"
#include "search/enumerate_kernel_graphs.h"
#include "search/program_rewrites.h"
#include "search/superoptimize.h"
#include "search_support.h"
#include "verify/abstract_expr.h"
#include "verify/abstract_expr_oracle.h"

namespace mugraph::search {
namespace {

using graph::OpKind;

graph::Program safeAttention(const std::string& shapes) {
  return graph::parseProgramText("program safe_attention\n" + shapes +
                                     "A = scale(matmul(Q, K), c=0.125)\n"
                                     "M = reduce_max(A, dim=2)\n"
                                     "E = exp(sub(A, M))\n"
                                     "S = reduce_sum(E, dim=2)\n"
                                     "O = matmul(div(E, S), V)\n"
                                     "output O\n",
                                 "safe_attention.mg");
}

// Sequences too long for one tile, so a single kernel has to loop over them.
graph::Program prefill() {
  return safeAttention(
      "input Q f16 [2, 64, 64]\ninput K f16 [2, 64, 4096]\ninput V f16 [2, 4096, 64]\n");
}

// Decode: 4 query rows per KV head, the cache stored [head, seq, dim].
graph::Program decode() {
  return safeAttention(
      "input Q f16 [4, 4, 64]\ninput K f16 [4, 64, 4096] layout=transposed\n"
      "input V f16 [4, 4096, 64]\n");
}

bool hasOp(const graph::KernelOp& kernel, OpKind kind) {
  if (!kernel.block) return false;
  for (const graph::BlockOp& op : kernel.block->ops) {
    if (op.kind == kind) return true;
  }
  return false;
}

// One kernel from the inputs to O: QK, running max, rescaled sums and PV in one loop.
bool isOnePassOnline(const graph::Schedule& s) {
  return s.graph.ops.size() == 1 && s.graph.ops[0].block->forloop > 1 &&
         hasOp(s.graph.ops[0], OpKind::Matmul) && hasOp(s.graph.ops[0], OpKind::AccumMax) &&
         hasOp(s.graph.ops[0], OpKind::AccumRescaledSum);
}

// Two kernels: partials over a grid split of K's sequence dim (each written with its max),
// then a combine that rescales them and divides.
bool isRescaledSplitKv(const graph::Schedule& s) {
  if (s.graph.ops.size() != 2 || !s.graph.ops[0].block) return false;
  const graph::KernelOp& partials = s.graph.ops[0];
  bool splitsSequence = false;
  for (const graph::BlockOp& op : partials.block->ops) {
    if (op.kind != OpKind::Input || s.graph.tensors[partials.inputs[op.kernelTensor]].name != "K")
      continue;
    for (int a = 0; a < graph::kGridAxes; ++a) {
      splitsSequence = splitsSequence || (partials.block->grid[a] > 1 && op.imap[a] == 2);
    }
  }
  const graph::KernelOp& combine = s.graph.ops[1];
  return splitsSequence && testing::readsPartial(s.graph, combine) &&
         hasOp(combine, OpKind::AccumMax) && hasOp(combine, OpKind::AccumRescaledSum) &&
         hasOp(combine, OpKind::Div);
}

SearchConfig twoKernelConfig(const graph::Program& program) {
  SearchConfig config = testing::quietOptions(program).config;
  config.maxKernels = 2;
  config.candidatePool = 100000;
  return config;
}

TEST(SafeAttentionSearch, TheSpaceHoldsOnePassOnlineAndRescaledSplitKvForPrefillAndDecode) {
  for (const graph::Program& program : {prefill(), decode()}) {
    SCOPED_TRACE(program.tensors[program.inputs[1]].name + " " +
                 graph::formatDims(program.tensors[program.inputs[1]].shape));
    int online = 0, split = 0;
    for (const Candidate& c : testing::wholeSpace(program, twoKernelConfig(program)).best) {
      online += isOnePassOnline(c.schedule);
      split += isRescaledSplitKv(c.schedule);
    }
    EXPECT_GT(online, 0);
    EXPECT_GT(split, 0);
  }
}

TEST(SafeAttentionSearch, SuperoptimizeReportsBothShapesVerifiedAtTheFiniteFieldLevel) {
  for (const graph::Program& program : {prefill(), decode()}) {
    SCOPED_TRACE(graph::formatDims(program.tensors[program.inputs[1]].shape));
    SearchOptions options = testing::quietOptions(program);
    options.config = twoKernelConfig(program);
    options.config.candidatePool = 64;
    options.config.maxVariants = 12;
    const SearchResult result = superoptimize(program, options);
    ASSERT_FALSE(result.variants.empty());
    bool online = false, split = false;
    for (const VerifiedVariant& v : result.variants) {
      EXPECT_EQ(v.verification.level, "finite-field") << v.name;
      EXPECT_LE(v.verification.falseAcceptBound, 1e-12) << v.name;
      online = online || isOnePassOnline(v.schedule);
      split = split || isRescaledSplitKv(v.schedule);
    }
    EXPECT_TRUE(online);
    EXPECT_TRUE(split);
  }
}

}  // namespace
}  // namespace mugraph::search
