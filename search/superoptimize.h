// The search, end to end: program forms (rewrites), the top-level subtrees of the kernel-graph
// enumeration explored in parallel with oneTBB, pruning with one shared abstract-expression
// oracle, a pool of the best candidates by cost, then verification of the best at their real
// shapes (float tests, then finite-field fingerprints with a stated bound).
// Results do not depend on the thread count: subtrees are merged order-independently and the
// ranking is a total order. Time limit, periodic atomic checkpoints and resume.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "search/checkpoint.h"
#include "search/cost_model.h"
#include "search/prune_reasons.h"
#include "search/search_config.h"
#include "verify/abstract_expr_oracle.h"
#include "verify/reference_cache.h"

namespace mugraph::search {

struct SearchOptions {
  SearchConfig config;
  int threads = 0;              // 0: every core
  double timeLimitSeconds = 0;  // 0: none; stops the enumeration (resumable)
  std::string checkpointPath;   // empty: no checkpoint
  bool resume = false;          // continue from checkpointPath
  double checkpointIntervalSeconds = 5;
  // Asked after each finished subtree with the number finished in this run; true stops the
  // enumeration as a time limit does (resumable). Embedders cancel or budget a search here.
  // Called from the worker threads, possibly at once.
  std::function<bool(int finishedSubtrees)> shouldStop;
  bool progress = true;          // progress line on stderr (only when it is a TTY)
  uint64_t verifySeed = 0x5eed;  // verification seed (replayable)
  // False: the best `maxVariants` candidates that plan are returned unverified (their
  // VerificationRecord says so). For the pieces of a split program, whose joined schedule is
  // verified against the whole program (superoptimize_pieces.h).
  bool verifyVariants = true;
};

struct VerifiedVariant {
  std::string name;   // graph::variantName(schedule)
  uint64_t hash = 0;  // of `schedule`
  CostEstimate cost;
  graph::Schedule schedule;  // as generated: predefined ops lowered for the search's target
  VerificationRecord verification;
  int joinedFromPieces = 0;  // > 0: joined from this many pieces' searches (split_program.h)
};

// What one rank of the run did (distributed/ranks.h); a single process is one rank.
struct RankWork {
  int threads = 0;
  int subtrees = 0;        // explored by this rank in this run
  int verifications = 0;   // candidates it verified (or found verified in the checkpoint)
  double busySeconds = 0;  // summed over its threads
  double seconds = 0;      // wall time until its last subtree, plus until its last verification
  int profiled = 0;        // variants it timed on its GPU (driver's --profile)
};

// Where the time of a run went, on rank 0 (docs/distributed_search.md models it from these).
struct WorkTimes {
  std::vector<double> subtreeSeconds;    // each subtree explored in this run, by ordinal
  double enumerationSeconds = 0;         // wall time of dealing out and exploring the subtrees
  double mergeSeconds = 0;               // rank 0's time merging their outcomes
  double verificationSeconds = 0;        // wall time of the verification
  std::vector<double> candidateSeconds;  // each candidate verified, in the order dealt
};

struct SearchSummary {
  int forms = 0;
  int subtrees = 0;
  int subtreesCompleted = 0;
  bool complete = false;  // every subtree explored
  bool stoppedByTimeLimit = false;
  ExploreStats stats;
  uint64_t candidates = 0;    // distinct finished schedules that passed pruning
  uint64_t verified = 0;      // reported variants
  uint64_t rejected = 0;      // candidates the verifier refuted
  uint64_t notEmittable = 0;  // candidates whose plan does not fit the target
  double seconds = 0;
  verify::OracleStats oracle;
  int pieces = 0;  // > 0: the program was searched in this many pieces (counts summed over them)
  std::vector<RankWork> ranks;  // on rank 0; a rank's own only on the others
  WorkTimes times;
};

struct SearchResult {
  SearchSummary summary;
  std::vector<VerifiedVariant> variants;  // best (estimated fastest) first
};

// A program with more ops than one candidate can cover (split_program.h), or whose search
// found no candidate because every one hit the kernel limit, is searched in pieces and the
// pieces' best variants joined (superoptimize_pieces.h).
SearchResult superoptimize(const graph::Program& program, const SearchOptions& options);

// Verifies `graph` against `program` at their real shapes, as every reported variant is:
// float tests, then finite-field fingerprints aiming at a false-accept bound of 1e-12.
// `cache` may be null.
VerificationRecord verifySchedule(const graph::Program& program, const graph::KernelGraph& graph,
                                  uint64_t seed,
                                  const std::shared_ptr<verify::ReferenceEvaluations>& cache);
// Whether a verification is good enough to report the variant: nothing disagreed (its bound
// is reported with it, below 1e-12 wherever the trials can reach that).
bool acceptable(const VerificationRecord& record);

// A string identifying the search space (config and arch), stored in checkpoints.
std::string configKey(const SearchConfig& config);

// A variant of another program computing the same function, with the same inputs and outputs
// by name and order (a rewritten form, a model's next layer renamed), as a schedule of
// `program`: the program replaced, the schedule named and hashed anew.
VerifiedVariant asVariantOf(const graph::Program& program, VerifiedVariant variant);

// Variants in the order the search reports them: by estimated cost, then by hash.
void rankVariantsByCost(std::vector<VerifiedVariant>& variants);

}  // namespace mugraph::search
