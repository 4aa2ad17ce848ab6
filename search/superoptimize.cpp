#include "search/superoptimize.h"

#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "distributed/ranks.h"
#include "distributed/work_queue.h"
#include "graph/dynamic_dims.h"
#include "graph/error.h"
#include "graph/hash.h"
#include "plan/schedule_plan.h"
#include "search/enumerate_kernel_graphs.h"
#include "search/program_rewrites.h"
#include "search/progress.h"
#include "search/range_cost.h"
#include "search/rank_messages.h"
#include "search/search_state.h"
#include "search/split_program.h"
#include "search/superoptimize_pieces.h"
#include "verify/abstract_expr.h"
#include "verify/equivalence.h"
#include "verify/reference_cache.h"

namespace mugraph::search {
namespace {

using Clock = detail::Clock;
using detail::Deadline;
using detail::Reporter;
using detail::SearchState;

struct Subtree {
  int form = 0;
  Step step;
};

}  // namespace

std::string configKey(const SearchConfig& c) {
  std::ostringstream key;
  key << c.target->name << " kernels " << c.maxKernels << " block_graphs " << c.maxBlockGraphKernels
      << " block_ops " << c.maxBlockOps << " epilogue_ops " << c.maxEpilogueOps << " blocks "
      << c.minGridBlocks << ".." << c.maxGridBlocks << " per_dim " << c.maxGridPerDim
      << " min_tile " << c.minMatmulTile << " threads";
  for (int t : c.threadCandidates) key << " " << t;
  key << " warpgroup_only";
  for (int t : c.warpgroupOnlyThreads) key << " " << t;
  key << " forloop";
  for (int64_t f : c.forloopCandidates) key << " " << f;
  key << " split " << c.allowGridSplitReduction << " sketches " << c.sketches << " forms "
      << c.maxRewriteForms << " pool " << c.candidatePool << " per_future " << c.childrenPerFuture;
  return key.str();
}

namespace {

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Rank 0's state as every rank's: the collective steps end with every rank holding what rank 0
// merged, so every rank computes the same result and takes the same branches after.
CheckpointState shareRootState(const SearchState& state) {
  return parseCheckpoint(
      distributed::broadcast(distributed::isRoot() ? checkpointText(state.snapshot())
                                                   : std::string()),
      "rank 0's search state");
}

// The options as a rank other than 0 runs them: no progress line, no checkpoint, no caller's
// stop hook (rank 0 alone deals out the work and decides when it ends).
SearchOptions optionsOnThisRank(const SearchOptions& options) {
  if (distributed::isRoot()) return options;
  SearchOptions local = options;
  local.progress = false;
  local.checkpointPath.clear();
  local.resume = false;
  local.shouldStop = nullptr;
  return local;
}

void addRankShares(std::vector<RankWork>& ranks, const std::vector<distributed::RankShare>& shares,
                   bool subtrees) {
  if (!distributed::isRoot()) return;
  ranks.resize(std::max(ranks.size(), shares.size()));
  for (size_t r = 0; r < shares.size(); ++r) {
    RankWork& work = ranks[r];
    work.threads = std::max(work.threads, shares[r].threads);
    (subtrees ? work.subtrees : work.verifications) += shares[r].items;
    work.busySeconds += shares[r].busySeconds;
    work.seconds += shares[r].seconds;
  }
}

// Variants in the order they are reported: by estimated cost, then by hash.
void rankByCost(std::vector<VerifiedVariant>& variants) {
  std::stable_sort(variants.begin(), variants.end(),
                   [](const VerifiedVariant& a, const VerifiedVariant& b) {
                     if (a.cost.microseconds != b.cost.microseconds) {
                       return a.cost.microseconds < b.cost.microseconds;
                     }
                     return a.hash < b.hash;
                   });
}

SearchResult searchWhole(const graph::Program& program, const SearchOptions& callerOptions) {
  const Clock::time_point start = Clock::now();
  const SearchOptions options = optionsOnThisRank(callerOptions);
  const SearchConfig& config = options.config;
  const int threads = options.threads > 0 ? options.threads : tbb::info::default_concurrency();
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, threads);

  // A softmax written without max subtraction is searched only in its safe form: no emitted
  // variant may overflow where the real-number function is finite.
  const std::vector<ProgramForm> forms =
      numericallySafeForms(programForms(program, config.maxRewriteForms, config.mergeEqualOps));
  // The oracle's targets: the output terms of the program and of each rewritten form. The
  // forms compute the same function by identities the axioms may not know (rms_norm is
  // uninterpreted there), so a schedule of a form is judged against that form's own terms.
  std::vector<verify::AbstractExprRef> targets;
  for (const ProgramForm& form : forms) {
    const std::vector<verify::AbstractExprRef> terms = verify::abstractExpressions(form.program);
    for (graph::TensorId t : form.program.outputs) targets.push_back(terms.at(t));
  }
  // A time-limited search asks Z3 new pruning questions in the first half of its time only,
  // none taking more than a tenth of it; later ones are answered "possible" (no pruning lost)
  // and cached answers still prune. Some targets take Z3 seconds a query (a LayerNorm after a
  // residual add, both outputs, behind a 256 x 1408 x 512 projection): a search limited to
  // five seconds spent 100 s in its subtrees' first steps and found nothing; now 5.8 s and 8181
  // candidates.
  verify::OracleOptions oracleOptions;
  if (options.timeLimitSeconds > 0) {
    oracleOptions.deadline =
        start + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(0.5 * options.timeLimitSeconds));
    oracleOptions.timeoutMs = static_cast<unsigned>(std::clamp(
        100.0 * options.timeLimitSeconds, 1.0, static_cast<double>(oracleOptions.timeoutMs)));
  }
  verify::SubexpressionOracle oracle(targets, oracleOptions);
  const KernelGraphEnumerator enumerator(program, config, oracle);

  std::vector<PartialSchedule> roots;
  std::vector<Subtree> subtrees;
  PruneCounts rootPruned{};  // first steps without room to finish
  for (size_t f = 0; f < forms.size(); ++f) {
    roots.push_back(enumerator.start(forms[f].program));
    for (Step& step : enumerator.steps(roots.back(), &rootPruned)) {
      subtrees.push_back(Subtree{static_cast<int>(f), std::move(step)});
    }
  }
  // Every form's sketched subtrees first (a time limit stops the later ones), those fusing the
  // most ops first: a sketch over the whole program (flash attention, a GEMM) is a finished
  // candidate at once, where a sketch of the first few ops opens a subtree over the rest.
  std::stable_sort(subtrees.begin(), subtrees.end(), [](const Subtree& a, const Subtree& b) {
    const auto rank = [](const Subtree& s) {
      return s.step.block.sketch.empty() ? -1 : s.step.last;
    };
    return rank(a) > rank(b);
  });

  CheckpointState initial;
  if (options.resume) {
    if (options.checkpointPath.empty()) throw UserError("--resume", "needs --checkpoint FILE");
    initial = loadCheckpoint(options.checkpointPath);
    if (initial.programHash != graph::programHash(program) ||
        initial.configKey != configKey(config) ||
        initial.subtrees != static_cast<int>(subtrees.size())) {
      throw UserError(options.checkpointPath,
                      "the checkpoint is of another program or search space; run without --resume");
    }
  } else {
    initial.programHash = graph::programHash(program);
    initial.configKey = configKey(config);
    initial.subtrees = static_cast<int>(subtrees.size());
    initial.stats.pruned = rootPruned;
  }
  // Dealt out by rank 0 (the other ranks' list is never read).
  std::vector<int> pending;
  for (int i = 0; i < static_cast<int>(subtrees.size()); ++i) {
    if (!initial.completed.count(i)) pending.push_back(i);
  }
  // Each subtree's first step, applied; of those that leave the same future only the
  // cheapest few are explored (enumerate_kernel_graphs.h), the rest complete as dominated.
  std::vector<std::optional<Child>> firstChildren(subtrees.size());
  std::vector<ExploreStats> firstStats(subtrees.size());
  tbb::parallel_for(size_t{0}, subtrees.size(), [&](size_t i) {
    firstChildren[i] = enumerator.child(roots[subtrees[i].form], subtrees[i].step, firstStats[i]);
  });
  const std::vector<bool> explored = undominated(firstChildren, config.childrenPerFuture);
  const double limit = options.timeLimitSeconds;
  const auto pastTimeLimit = [&] {
    return limit > 0 && std::chrono::duration<double>(Clock::now() - start).count() > limit;
  };
  SearchState state(std::move(initial));
  std::atomic<size_t> verifiedCount{0};
  std::atomic<bool> stop{false};
  int finishedThisRun = 0;
  std::atomic<bool> timeUp{false};
  SearchResult result;
  WorkTimes& times = result.summary.times;
  CheckpointState final;  // rank 0's state at the end, on every rank
  {
    Reporter reporter(state, options, start, verifiedCount);
    // The time limit also stops subtrees under way (what they found so far is kept); each
    // rank keeps its own, rank 0's ends the dealing.
    Deadline deadline(pastTimeLimit, [&] {
      timeUp = true;
      stop = true;
    });
    // The subtrees, dealt out over every rank's threads; rank 0 merges each outcome (an
    // order-independent merge, so the arrival order does not matter).
    distributed::WorkItems subtreeWork;
    subtreeWork.items = pending;
    subtreeWork.threadsPerRank = threads;
    subtreeWork.run = [&](int ordinal) {
      SubtreeOutcome outcome;
      outcome.origin = ordinal;
      outcome.stats = firstStats[ordinal];
      if (firstChildren[ordinal]) {
        if (explored[ordinal]) {
          enumerator.explore(firstChildren[ordinal]->state, outcome, stop);
        } else {
          ++outcome.stats.pruned[static_cast<int>(PruneReason::Dominated)];
        }
      }
      return std::any(std::move(outcome));
    };
    subtreeWork.encode = encodeOutcome;
    subtreeWork.decode = decodeOutcome;
    std::map<int, double> subtreeSeconds;
    Clock::time_point phase = Clock::now();
    subtreeWork.collect = [&](int ordinal, std::any&& result, double seconds) {
      const Clock::time_point merging = Clock::now();
      subtreeSeconds[ordinal] = seconds;
      SubtreeOutcome outcome = std::any_cast<SubtreeOutcome&&>(std::move(result));
      outcome.origin = ordinal;
      const bool completed = outcome.completed;
      state.merge(ordinal, std::move(outcome), static_cast<size_t>(config.candidatePool));
      times.mergeSeconds += secondsSince(merging);
      if (!completed) return;
      ++finishedThisRun;
      if (options.shouldStop && options.shouldStop(finishedThisRun)) stop = true;
      if (pastTimeLimit()) {
        timeUp = true;
        stop = true;
      }
    };
    addRankShares(result.summary.ranks, distributed::runOnEveryRank(subtreeWork, stop), true);
    times.enumerationSeconds = secondsSince(phase);
    for (const auto& [ordinal, seconds] : subtreeSeconds) times.subtreeSeconds.push_back(seconds);
    phase = Clock::now();
    deadline.cancel();
    reporter.checkpointNow();
    timeUp = distributed::broadcast(timeUp ? "1" : "0") == "1";

    // Verify the best candidates at their real shapes until enough pass, in verificationOrder
    // (candidate_pool.h); the report is ordered by estimated cost.
    const CheckpointState found = shareRootState(state);
    const auto referenceCache = std::make_shared<verify::ReferenceEvaluations>(program);
    std::vector<size_t> first;
    // A dynamic program: before them, each ranking length's cheapest, then each one's runner-up,
    // so the dispatch over the lengths (driver/range_ranking.h) has the best tiles of each
    // bucket to choose from (--profile measures which is faster; the model's ties are many).
    if (!program.dims.empty()) {
      const std::vector<graph::DimValues> lengths = rankingLengths(program);
      std::vector<std::vector<double>> costs;
      for (const Candidate& c : found.pool) {
        costs.push_back(c.lengthCosts.size() == lengths.size()
                            ? c.lengthCosts
                            : costOverRange(c.schedule, lengths, *config.target));
      }
      first = cheapestAtEachLength(costs, 2);
    }
    std::vector<const Candidate*> order;
    for (size_t i : verificationOrder(found.pool, first)) order.push_back(&found.pool[i]);
    // Dealt out in that order, one candidate at a time per rank (verification uses the
    // rank's threads); rank 0 ends the dealing once the candidates before the next one to deal
    // hold enough acceptable variants, so the verdicts used are those a single process gets.
    if (options.verifyVariants) {
      std::map<int, bool> passed;  // by position in `order`: acceptable (false: not emittable)
      size_t settled = 0;          // positions before this one all have a verdict
      int accepted = 0;
      std::atomic<bool> enough{config.maxVariants <= 0};
      distributed::WorkItems verification;
      for (size_t i = 0; i < order.size(); ++i) verification.items.push_back(static_cast<int>(i));
      verification.run = [&](int i) {
        const Candidate& candidate = *order[i];
        try {
          plan::planSchedule(candidate.schedule, *config.target);
        } catch (const UserError&) {
          return std::any(Verdict());
        }
        const auto known = found.verified.find(candidate.hash);
        return std::any(Verdict(
            std::pair(candidate.hash, known != found.verified.end()
                                          ? known->second
                                          : verifySchedule(program, candidate.schedule.graph,
                                                           options.verifySeed, referenceCache))));
      };
      verification.encode = encodeVerdict;
      verification.decode = decodeVerdict;
      verification.collect = [&](int i, std::any&& result, double seconds) {
        times.candidateSeconds.push_back(seconds);
        const Verdict verdict = std::any_cast<Verdict&&>(std::move(result));
        passed[i] = false;
        if (verdict) {
          const auto& [hash, record] = *verdict;
          passed[i] = acceptable(record);
          if (!found.verified.count(hash)) {
            state.recordVerification(hash, record);
            reporter.checkpointNow();
          }
        }
        for (; passed.count(static_cast<int>(settled)); ++settled) {
          if (passed[static_cast<int>(settled)] && ++accepted >= config.maxVariants) enough = true;
        }
      };
      addRankShares(result.summary.ranks, distributed::runOnEveryRank(verification, enough), false);
    }
    times.verificationSeconds = secondsSince(phase);
    final = shareRootState(state);
    for (const Candidate* next : order) {
      const Candidate& candidate = *next;
      if (static_cast<int>(result.variants.size()) >= config.maxVariants) break;
      // Block graphs were planned when the search built them; the default block graphs of
      // predefined ops are planned here. A candidate whose plan does not fit is never reported.
      std::optional<plan::SchedulePlan> planned;
      try {
        planned = plan::planSchedule(candidate.schedule, *config.target);
      } catch (const UserError&) {
        ++result.summary.notEmittable;
        continue;
      }
      VerificationRecord record;
      if (!options.verifyVariants) {
        record.detail = "not verified";
      } else {
        record = final.verified.at(candidate.hash);
      }
      if (options.verifyVariants && !acceptable(record)) {
        ++result.summary.rejected;
        continue;
      }
      // The variant is the schedule as its code is generated (predefined ops lowered; the
      // lowering is equivalence-preserving), and is named by it.
      VerifiedVariant variant;
      variant.schedule = *planned->lowered;
      variant.hash = graph::scheduleHash(variant.schedule);
      variant.name = graph::variantName(variant.schedule);
      variant.cost = estimateCost(candidate.schedule.graph, *config.target);
      variant.verification = record;
      result.variants.push_back(std::move(variant));
      ++verifiedCount;
    }
    rankByCost(result.variants);
  }
  SearchSummary& summary = result.summary;
  summary.forms = static_cast<int>(forms.size());
  summary.stoppedByTimeLimit = timeUp.load();
  summary.subtrees = final.subtrees;
  summary.subtreesCompleted = static_cast<int>(final.completed.size());
  summary.complete = summary.subtreesCompleted == summary.subtrees;
  summary.stats = final.stats;
  summary.candidates = final.hashes.size();
  summary.verified = result.variants.size();
  summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  summary.oracle = oracle.stats();
  return result;
}

// Adds `more` to `into`'s variants (those it has already by hash left out) and keeps the
// cheapest `maxVariants` of them, by cost, then hash.
void addVariants(SearchResult& into, std::vector<VerifiedVariant> more, int maxVariants) {
  for (VerifiedVariant& v : more) {
    const bool seen = std::any_of(into.variants.begin(), into.variants.end(),
                                  [&](const VerifiedVariant& w) { return w.hash == v.hash; });
    if (!seen) into.variants.push_back(std::move(v));
  }
  rankByCost(into.variants);
  if (into.variants.size() > static_cast<size_t>(std::max(maxVariants, 1))) {
    into.variants.resize(static_cast<size_t>(std::max(maxVariants, 1)));
  }
  into.summary.verified = into.variants.size();
}

// The time a second search may take after the first, started at `start`, of a run limited to
// `limit` seconds (0: none).
double timeLeft(double limit, std::chrono::steady_clock::time_point start) {
  if (limit <= 0) return 0;
  const double spent =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::max(limit - spent, 0.5);
}

// superoptimize of one program form, without recomputedPrologues.
SearchResult superoptimizeForm(const graph::Program& program, const SearchOptions& options) {
  // In pieces up front when no candidate can cover the whole program. When the limits leave
  // no room for every matmul as a kernel of its own (not in attention, whose two matmuls the
  // flash sketches fuse into one kernel): the whole program (where its rewritten forms fuse
  // the matmuls: a norm and a gated MLP in one kernel), then pieces that leave that room,
  // ranked together, each search with half the time. After the whole search when every
  // candidate it began ran into the kernel limit: pieces of at most half its ops. Pieces have
  // fewer ops than their program, so splitting again ends at single ops.
  const int ops = static_cast<int>(program.ops.size());
  if (!options.config.splitLargePrograms) return searchWhole(program, options);
  const PieceLimits byOps{maxOpsPerPiece(options.config, ops)};
  const bool attention = classifyProgram(program) == ProgramKind::Attention;
  if (ops > maxOpsOneSearch(options.config)) {
    return superoptimizeInPieces(program, options,
                                 attention ? byOps : pieceLimits(options.config, ops));
  }
  const bool matmulsCrowded = !attention && !roomForMatmulsAlone(program, options.config);
  const auto start = std::chrono::steady_clock::now();
  SearchOptions first = options;
  if (matmulsCrowded && options.timeLimitSeconds > 0) {
    first.timeLimitSeconds = options.timeLimitSeconds / 2;
  }
  SearchResult whole = searchWhole(program, first);
  if (matmulsCrowded) {
    SearchOptions rest = options;
    rest.timeLimitSeconds = timeLeft(options.timeLimitSeconds, start);
    SearchResult pieces = superoptimizeInPieces(program, rest, pieceLimits(options.config, ops));
    addUp(whole.summary, pieces.summary);
    whole.summary.complete = whole.summary.complete && pieces.summary.complete;
    addVariants(whole, std::move(pieces.variants), options.config.maxVariants);
    whole.summary.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return whole;
  }
  const uint64_t kernelLimited =
      whole.summary.stats.pruned[static_cast<int>(PruneReason::KernelLimit)];
  if (whole.summary.candidates == 0 && kernelLimited > 0 && ops > 1) {
    return superoptimizeInPieces(program, options, byOps);
  }
  return whole;
}

}  // namespace

// (superoptimize.h)
VerifiedVariant asVariantOf(const graph::Program& program, VerifiedVariant variant) {
  variant.schedule.program = program;
  variant.schedule.name = program.name;
  variant.schedule.name += ".v" + graph::hashHex(graph::scheduleHash(variant.schedule));
  variant.schedule.graph.name = variant.schedule.name;
  variant.hash = graph::scheduleHash(variant.schedule);
  variant.name = graph::variantName(variant.schedule);
  return variant;
}

SearchResult superoptimize(const graph::Program& program, const SearchOptions& options) {
  const std::optional<graph::Program> recomputed =
      options.config.recomputePrologues ? recomputedPrologues(program) : std::nullopt;
  if (!recomputed) return superoptimizeForm(program, options);
  // Both forms, each with half the time limit; pieces of either are not rewritten again. The
  // second runs without the checkpoint (a resumed run searches it again).
  const auto start = std::chrono::steady_clock::now();
  SearchOptions each = options;
  each.config.recomputePrologues = false;
  if (options.timeLimitSeconds > 0) each.timeLimitSeconds = options.timeLimitSeconds / 2;
  SearchResult result = superoptimizeForm(program, each);
  each.timeLimitSeconds = timeLeft(options.timeLimitSeconds, start);
  each.checkpointPath.clear();
  each.resume = false;
  each.config.mergeEqualOps = false;
  SearchResult other = superoptimizeForm(*recomputed, each);
  SearchSummary& summary = result.summary;
  addUp(summary, other.summary);
  summary.complete = summary.complete && other.summary.complete;
  std::vector<VerifiedVariant> moved;
  for (VerifiedVariant& v : other.variants) moved.push_back(asVariantOf(program, std::move(v)));
  addVariants(result, std::move(moved), options.config.maxVariants);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

void rankVariantsByCost(std::vector<VerifiedVariant>& variants) {
  rankByCost(variants);
}

}  // namespace mugraph::search
