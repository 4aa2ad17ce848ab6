// Kernel graphs, depth-first. The program's ops (in one form of program_rewrites.h) are cut
// into consecutive segments in their canonical topological order, so every partition is met
// once; a segment becomes a predefined op (a single op) or a block-graph kernel (one choice of
// block_choices.h or of a sketch, sketches.h, built by build_block_graph.h). A block graph that
// splits a reduction across the grid leaves combine ops (reduce_sum(to=k) of its partial
// outputs) at the front of what remains, where they are scheduled like any other op: as
// predefined ops or fused into the next block graph.
//
// A block graph of one op (a generic tiling of a matmul, or a sketch's: the warpgroup GEMM) is
// a lowering of that op, like the predefined op's default one: it counts as a kernel, not
// against `maxBlockGraphKernels`, which bounds fusion of several ops. So a matmul that ends up
// alone gets its fast tilings however many fused block graphs came before it.
//
// Dominance: a schedule's estimated cost is the sum of its kernels' (cost_model.h), and two
// partial schedules that leave the same future (the same ops to schedule, the same kernel
// tensors, the same counts) have equal subtrees, their candidates differing only in the
// kernels so far. So of the children of one partial schedule only the `childrenPerFuture`
// cheapest of each future are explored, and within a top-level subtree a partial schedule is
// explored only while fewer than `childrenPerFuture` cheaper or equal ones with its future were;
// the rest are counted as `dominated`. Children that complete a schedule are always kept.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/builder.h"
#include "graph/dynamic_dims.h"
#include "search/block_choices.h"
#include "search/build_block_graph.h"
#include "search/candidate_pool.h"
#include "search/dataflow.h"
#include "search/prune_reasons.h"
#include "search/search_config.h"
#include "verify/abstract_expr_oracle.h"

namespace mugraph::search {

// A schedule under construction: the kernels so far and the ops still to schedule.
struct PartialSchedule {
  Dataflow flow;
  graph::GraphBuilder builder;
  std::vector<graph::TensorId> kernelTensorOf;       // per dataflow tensor, -1 until computed
  std::vector<verify::AbstractExprRef> kernelTerms;  // abstract expression per kernel tensor
  int position = 0;                                  // next op of flow.ops to schedule
  int kernels = 0;
  int blockGraphKernels = 0;
  int gridSplits = 0;       // block graphs that split a reduction across the grid (write partials)
  double microseconds = 0;  // the kernels' estimates so far (cost_model.h)
};

// One way to extend a partial schedule: ops [position, last] as a predefined op
// (choice == -1) or as the block graph `block`, the choice-th for that segment.
struct Step {
  int last = 0;
  int choice = -1;
  BlockChoice block;
};

struct ExploreStats {
  uint64_t states = 0;
  PruneCounts pruned{};
};

// A step applied: the partial schedule it made, the estimated microseconds of the kernel it
// added, and what the search below it depends on (equal for two siblings: equal subtrees).
struct Child {
  PartialSchedule state;
  double kernelMicroseconds = 0;
  std::string future;
  // Of a dynamic program's sketch kernel (a member of a parametric family: parts, tiles), its
  // estimate at each of the program's ranking lengths (range_cost.h); empty otherwise. The
  // kernelMicroseconds above are at the reference length (every dim at its max), where the
  // family's members that win the short lengths (a 64-key tile, one trip per part at 1024 keys)
  // lose to the long lengths' large tiles.
  std::vector<double> rangeMicroseconds;
};

// Of the children of one partial schedule (pruned ones empty), which to explore: the
// `perFuture` cheapest of each future (ties by position), every complete one, or all when
// `perFuture` <= 0; and, of the children with rangeMicroseconds, those among the `perFuture`
// cheapest of their future's such children at some ranking length (sketch families are small,
// so this keeps few more). A child left out is dominated.
std::vector<bool> undominated(const std::vector<std::optional<Child>>& children, int perFuture);

// The candidates one subtree produced: every hash (to count and dedupe) and the best few.
struct SubtreeOutcome {
  int origin = 0;  // the subtree's ordinal, stamped on its candidates
  ExploreStats stats;
  std::set<uint64_t> hashes;
  std::vector<Candidate> best;  // at most config.candidatePool, best first
  bool completed = true;        // false when stopped early (time limit or stop request)
  // Per future met (hashed), the estimates of the cheapest partial schedules explored with it.
  std::unordered_map<uint64_t, std::vector<double>> explored;
};

class KernelGraphEnumerator {
 public:
  KernelGraphEnumerator(const graph::Program& program, const SearchConfig& config,
                        verify::SubexpressionOracle& oracle);

  PartialSchedule start(const graph::Program& form) const;
  // Segments whose kernels left could not cover the ops left are counted in `pruned`
  // (kernel_limit), not built.
  std::vector<Step> steps(const PartialSchedule& state, PruneCounts* pruned = nullptr) const;
  // Applies `step` to `state`; false (with the reason counted in `stats`) if pruned.
  bool apply(const PartialSchedule& state, const Step& step, PartialSchedule& child,
             ExploreStats& stats) const;
  // apply(), with the added kernel's estimate and the child's future; nothing if pruned.
  std::optional<Child> child(const PartialSchedule& state, const Step& step,
                             ExploreStats& stats) const;
  // Whether `state` has every op scheduled (finish() makes it a candidate).
  bool complete(const PartialSchedule& state) const;
  // Depth-first below `state`, until done or `stop` is set (then `outcome.completed` is
  // false).
  void explore(const PartialSchedule& state, SubtreeOutcome& outcome,
               const std::atomic<bool>& stop) const;

 private:
  bool possibleSubexpression(const verify::AbstractExprRef& term) const;
  bool roomToFinish(const PartialSchedule& state, int position, int blockGraphKernels) const;
  // Whether `child` (not complete) is dominated within the subtree `outcome` records;
  // records it otherwise.
  bool dominated(const Child& child, SubtreeOutcome& outcome) const;
  bool prunedByAbstractExpressions(const PartialSchedule& state, const Segment& segment,
                                   const graph::BlockGraph& block) const;
  void finish(const PartialSchedule& state, SubtreeOutcome& outcome) const;

  const graph::Program& program_;
  const std::vector<graph::DimValues> rankingLengths_;  // empty for a static program
  const SearchConfig& config_;
  verify::SubexpressionOracle& oracle_;
  uint64_t id_;  // distinct per enumerator: keys the per-thread oracle memo
};

}  // namespace mugraph::search
