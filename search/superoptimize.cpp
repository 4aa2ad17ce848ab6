#include "search/superoptimize.h"

#include "verify/reference_cache.h"

#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "graph/error.h"
#include "graph/hash.h"
#include "plan/schedule_plan.h"
#include "search/enumerate_kernel_graphs.h"
#include "search/program_rewrites.h"
#include "search/progress.h"
#include "search/split_program.h"
#include "search/superoptimize_pieces.h"
#include "verify/abstract_expr.h"
#include "verify/equivalence.h"
#include "verify/reference_cache.h"

namespace mugraph::search {
namespace {

using Clock = std::chrono::steady_clock;

struct Subtree {
  int form = 0;
  Step step;
};

// The shared, mutex-guarded state of a running search; also what a checkpoint saves.
class SearchState {
 public:
  explicit SearchState(CheckpointState initial) : saved_(std::move(initial)) {}

  // A completed subtree counts; one a stop interrupted gives its candidates only (a resumed
  // search explores it again, and the candidates merge by hash).
  void merge(int ordinal, SubtreeOutcome&& outcome, size_t poolLimit) {
    std::lock_guard lock(mutex_);
    if (outcome.completed) {
      saved_.completed.insert(ordinal);
      saved_.stats.states += outcome.stats.states;
      for (int r = 0; r < kPruneReasons; ++r) saved_.stats.pruned[r] += outcome.stats.pruned[r];
    }
    saved_.hashes.insert(outcome.hashes.begin(), outcome.hashes.end());
    for (Candidate& c : outcome.best) keepInPool(saved_.pool, std::move(c), poolLimit);
  }
  void recordVerification(uint64_t hash, const VerificationRecord& record) {
    std::lock_guard lock(mutex_);
    saved_.verified[hash] = record;
  }
  CheckpointState snapshot() const {
    std::lock_guard lock(mutex_);
    return saved_;
  }
  std::string progressText(double seconds, size_t verified) const {
    std::lock_guard lock(mutex_);
    std::ostringstream text;
    uint64_t pruned = 0;
    for (uint64_t n : saved_.stats.pruned) pruned += n;
    text << "search: subtrees " << saved_.completed.size() << "/" << saved_.subtrees << "  states "
         << saved_.stats.states << "  pruned " << pruned << " (";
    bool first = true;
    for (int r = 0; r < kPruneReasons; ++r) {
      if (saved_.stats.pruned[r] == 0) continue;
      text << (first ? "" : ", ") << pruneReasonName(static_cast<PruneReason>(r)) << " "
           << saved_.stats.pruned[r];
      first = false;
    }
    text << ")  candidates " << saved_.hashes.size() << "  verified " << verified << "  "
         << static_cast<int>(seconds) << "s";
    return text.str();
  }

 private:
  mutable std::mutex mutex_;
  CheckpointState saved_;
};

// Redraws the progress line and writes checkpoints on a timer until stopped.
class Reporter {
 public:
  Reporter(const SearchState& state, const SearchOptions& options, Clock::time_point start,
           const std::atomic<size_t>& verified)
      : state_(state),
        options_(options),
        start_(start),
        verified_(verified),
        line_(options.progress),
        thread_([this] { run(); }) {}
  ~Reporter() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
    line_.update(state_.progressText(elapsed(), verified_.load()));
    line_.finish();
  }
  void checkpointNow() {
    if (!options_.checkpointPath.empty())
      saveCheckpoint(options_.checkpointPath, state_.snapshot());
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  void run() {
    auto lastCheckpoint = Clock::now();
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return done_; })) {
      line_.update(state_.progressText(elapsed(), verified_.load()));
      if (std::chrono::duration<double>(Clock::now() - lastCheckpoint).count() >=
          options_.checkpointIntervalSeconds) {
        checkpointNow();
        lastCheckpoint = Clock::now();
      }
    }
  }

  const SearchState& state_;
  const SearchOptions& options_;
  Clock::time_point start_;
  const std::atomic<size_t>& verified_;
  ProgressLine line_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

// Calls `onPassed` once `passed()` holds (checked every 100 ms), unless cancelled first.
class Deadline {
 public:
  Deadline(std::function<bool()> passed, std::function<void()> onPassed)
      : passed_(std::move(passed)), onPassed_(std::move(onPassed)), thread_([this] { run(); }) {}
  ~Deadline() { cancel(); }
  void cancel() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return done_; })) {
      if (passed_()) {
        onPassed_();
        return;
      }
    }
  }

  std::function<bool()> passed_;
  std::function<void()> onPassed_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

VerificationRecord verifySchedule(const graph::Program& program, const graph::KernelGraph& graph,
                                  uint64_t seed,
                                  const std::shared_ptr<verify::ReferenceEvaluations>& cache) {
  verify::EquivalenceOptions options;
  options.seed = seed;
  options.referenceCache = cache;
  options.targetBound = 1e-12;
  VerificationRecord record;
  try {
    const verify::EquivalenceReport report = verify::checkEquivalence(program, graph, options);
    record.equivalent = report.equivalent;
    record.level = verify::levelName(report.level);
    record.falseAcceptBound = report.falseAcceptBound;
    record.trials = report.trials;
    record.maxRelError = report.maxRelError;
    record.detail = report.equivalent ? report.levelReason : report.mismatch;
  } catch (const UserError& e) {
    record.equivalent = false;
    record.detail = e.what();
  }
  return record;
}

bool acceptable(const VerificationRecord& record) {
  return record.equivalent && (record.level != "finite-field" || record.falseAcceptBound <= 1e-12);
}

std::string configKey(const SearchConfig& c) {
  std::ostringstream key;
  key << c.target->name << " kernels " << c.maxKernels << " block_graphs " << c.maxBlockGraphKernels
      << " block_ops " << c.maxBlockOps << " blocks " << c.minGridBlocks << ".." << c.maxGridBlocks
      << " per_dim " << c.maxGridPerDim << " min_tile " << c.minMatmulTile << " threads";
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

SearchResult searchWhole(const graph::Program& program, const SearchOptions& options) {
  const Clock::time_point start = Clock::now();
  const SearchConfig& config = options.config;
  const int threads = options.threads > 0 ? options.threads : tbb::info::default_concurrency();
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, threads);

  // A softmax written without max subtraction is searched only in its safe form: no emitted
  // variant may overflow where the real-number function is finite.
  const std::vector<ProgramForm> forms =
      numericallySafeForms(programForms(program, config.maxRewriteForms));
  // The oracle's targets: the output terms of the program and of each rewritten form. The
  // forms compute the same function by identities the axioms may not know (rms_norm is
  // uninterpreted there), so a schedule of a form is judged against that form's own terms.
  std::vector<verify::AbstractExprRef> targets;
  for (const ProgramForm& form : forms) {
    const std::vector<verify::AbstractExprRef> terms = verify::abstractExpressions(form.program);
    for (graph::TensorId t : form.program.outputs) targets.push_back(terms.at(t));
  }
  verify::SubexpressionOracle oracle(targets);
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
  std::vector<int> pending;
  for (int i = 0; i < static_cast<int>(subtrees.size()); ++i) {
    if (!initial.completed.count(i)) pending.push_back(i);
  }
  // Each pending subtree's first step, applied; of those that leave the same future only the
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
  std::atomic<int> finishedThisRun{0};
  std::atomic<bool> timeUp{false};
  SearchResult result;
  {
    Reporter reporter(state, options, start, verifiedCount);
    // The time limit also stops subtrees under way (what they found so far is kept).
    Deadline deadline(pastTimeLimit, [&] {
      timeUp = true;
      stop = true;
    });
    tbb::parallel_for(size_t{0}, pending.size(), [&](size_t i) {
      if (stop.load()) return;
      const int ordinal = pending[i];
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
      const bool completed = outcome.completed;
      state.merge(ordinal, std::move(outcome), static_cast<size_t>(config.candidatePool));
      if (!completed) return;
      const int finished = ++finishedThisRun;
      if (options.shouldStop && options.shouldStop(finished)) stop = true;
      if (pastTimeLimit()) {
        timeUp = true;
        stop = true;
      }
    });
    deadline.cancel();
    reporter.checkpointNow();

    // Verify the best candidates at their real shapes until enough pass: first the best of
    // each solution shape (so the report shows each), then the rest, best first; the report
    // is ordered by estimated cost.
    const CheckpointState found = state.snapshot();
    const auto referenceCache = std::make_shared<verify::ReferenceEvaluations>(program);
    std::vector<const Candidate*> order;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t i = 0; i < found.pool.size(); ++i) {
        if (bestOfItsShape(found.pool, i) == (pass == 0)) order.push_back(&found.pool[i]);
      }
    }
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
      const auto known = found.verified.find(candidate.hash);
      if (!options.verifyVariants) {
        record.detail = "not verified";
      } else if (known != found.verified.end()) {
        record = known->second;
      } else {
        record =
            verifySchedule(program, candidate.schedule.graph, options.verifySeed, referenceCache);
        state.recordVerification(candidate.hash, record);
        reporter.checkpointNow();
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
    std::stable_sort(result.variants.begin(), result.variants.end(),
                     [](const VerifiedVariant& a, const VerifiedVariant& b) {
                       if (a.cost.microseconds != b.cost.microseconds) {
                         return a.cost.microseconds < b.cost.microseconds;
                       }
                       return a.hash < b.hash;
                     });
  }
  const CheckpointState final = state.snapshot();
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

}  // namespace

SearchResult superoptimize(const graph::Program& program, const SearchOptions& options) {
  // Up front when no candidate can cover the whole program, or when the limits leave no room
  // for every matmul as a kernel of its own (not in attention, whose two matmuls the flash
  // sketches fuse into one kernel): pieces that leave that room. After the whole search when
  // every candidate it began ran into the kernel limit: pieces of at most half its ops. Pieces
  // have fewer ops than their program, so splitting again ends at single ops.
  const int ops = static_cast<int>(program.ops.size());
  if (!options.config.splitLargePrograms) return searchWhole(program, options);
  const PieceLimits byOps{maxOpsPerPiece(options.config, ops)};
  const bool attention = classifyProgram(program) == ProgramKind::Attention;
  const bool matmulsCrowded = !attention && !roomForMatmulsAlone(program, options.config);
  if (ops > maxOpsOneSearch(options.config) || matmulsCrowded) {
    return superoptimizeInPieces(program, options,
                                 attention ? byOps : pieceLimits(options.config, ops));
  }
  SearchResult whole = searchWhole(program, options);
  const uint64_t kernelLimited =
      whole.summary.stats.pruned[static_cast<int>(PruneReason::KernelLimit)];
  if (whole.summary.candidates == 0 && kernelLimited > 0 && ops > 1) {
    return superoptimizeInPieces(program, options, byOps);
  }
  return whole;
}

}  // namespace mugraph::search
