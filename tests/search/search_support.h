// Helpers shared by the search tests: small programs, quick configs, and structural
// questions about a found schedule (does it split a reduction across the grid? loop?).
#pragma once

#include <atomic>
#include <set>
#include <string>
#include <vector>

#include "graph/program_text.h"
#include "search/builtin_programs.h"
#include "search/enumerate_kernel_graphs.h"
#include "search/program_rewrites.h"
#include "search/superoptimize.h"
#include "verify/abstract_expr.h"
#include "verify/abstract_expr_oracle.h"

namespace mugraph::search::testing {

// Mirage's GQA program at a reduced size: the same statements, smaller dims.
inline graph::Program smallGqa() {
  return graph::parseProgramText(
      "program gqa_small\n"
      "input Q f16 [2, 32, 16]\n"
      "input K f16 [2, 16, 256]\n"
      "input V f16 [2, 256, 16]\n"
      "A = matmul(Q, K)\n"
      "E = exp(A)\n"
      "S = reduce_sum(E, dim=2)\n"
      "O = matmul(div(E, S), V)\n"
      "output O\n",
      "gqa_small.mg");
}

inline SearchOptions quietOptions(const graph::Program& program) {
  SearchOptions options;
  options.config = defaultConfig(classifyProgram(program));
  options.progress = false;
  return options;
}

inline std::vector<std::string> variantNames(const SearchResult& result) {
  std::vector<std::string> names;
  for (const VerifiedVariant& v : result.variants) names.push_back(v.name);
  return names;
}

inline bool readsPartial(const graph::KernelGraph& g, const graph::KernelOp& op) {
  for (graph::TensorId t : op.inputs) {
    if (g.tensors[t].name.find("_part") != std::string::npos) return true;
  }
  return false;
}

// Split-KV: kernel 1 splits K's sequence dim across the grid and loops over it; a later
// kernel reads its partial results and divides.
inline bool isSplitKv(const graph::Schedule& schedule) {
  const graph::KernelGraph& g = schedule.graph;
  bool partialKernel = false, combineDivides = false;
  for (const graph::KernelOp& op : g.ops) {
    if (op.block && op.block->forloop > 1) {
      for (const graph::BlockOp& bop : op.block->ops) {
        if (bop.kind != graph::OpKind::Input) continue;
        if (g.tensors[op.inputs[bop.kernelTensor]].name != "K") continue;
        bool gridSplitsSeq = false;
        for (int a = 0; a < graph::kGridAxes; ++a) {
          gridSplitsSeq = gridSplitsSeq || (op.block->grid[a] > 1 && bop.imap[a] == 2);
        }
        partialKernel = partialKernel || (gridSplitsSeq && bop.fmap == 2);
      }
    }
    if (partialKernel && readsPartial(g, op)) {
      if (op.kind == graph::OpKind::Div) combineDivides = true;
      if (op.block) {
        for (const graph::BlockOp& bop : op.block->ops) {
          combineDivides = combineDivides || bop.kind == graph::OpKind::Div;
        }
      }
    }
  }
  // A predefined combine: reduce_sum kernels followed by a div kernel.
  if (partialKernel && !combineDivides) {
    for (const graph::KernelOp& op : g.ops)
      combineDivides = combineDivides || op.kind == graph::OpKind::Div;
  }
  return partialKernel && combineDivides;
}

// Every candidate of the space (before ranking, with each form's best `config.candidatePool`
// kept), and the hashes of all of them: what the search's pool is drawn from.
struct Space {
  std::vector<Candidate> best;
  std::set<uint64_t> hashes;
};

inline Space wholeSpace(const graph::Program& program, const SearchConfig& config) {
  std::vector<verify::AbstractExprRef> targets;
  const std::vector<ProgramForm> forms = programForms(program, config.maxRewriteForms);
  for (const ProgramForm& form : forms) {
    const auto terms = verify::abstractExpressions(form.program);
    for (graph::TensorId t : form.program.outputs) targets.push_back(terms.at(t));
  }
  verify::SubexpressionOracle oracle(targets);
  const KernelGraphEnumerator enumerator(program, config, oracle);
  std::atomic<bool> stop{false};
  Space space;
  for (const ProgramForm& form : forms) {
    SubtreeOutcome outcome;
    enumerator.explore(enumerator.start(form.program), outcome, stop);
    space.best.insert(space.best.end(), outcome.best.begin(), outcome.best.end());
    space.hashes.insert(outcome.hashes.begin(), outcome.hashes.end());
  }
  return space;
}

}  // namespace mugraph::search::testing
