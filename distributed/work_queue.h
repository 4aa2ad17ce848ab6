// Items dealt out dynamically over the threads of every rank: a thread asks rank 0 for the
// next item each time it finishes one, so the ranks that finish first are given more. Rank 0
// receives every result and hands it to `collect`; its own threads take items too. In a single
// process this is a parallel loop over the items. The callers make results independent of
// which rank ran an item and of their arrival order (search/superoptimize.cpp merges in a
// canonical order).
#pragma once

#include <any>
#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace mugraph::distributed {

struct WorkItems {
  std::vector<int> items;  // dealt in this order; read on rank 0 only
  // Threads per rank taking items at once; 1 deals the items strictly in order and, in a
  // single process, runs them one after another.
  int threadsPerRank = 1;
  // Runs on any rank, on several threads at once: the item's result.
  std::function<std::any(int item)> run;
  // A result as bytes and back, for results of the ranks other than 0 only: rank 0's own
  // (and a single process's) reach `collect` as they are, never encoded.
  std::function<std::string(const std::any& result)> encode;
  std::function<std::any(const std::string& bytes)> decode;
  // Runs on rank 0 only, one call at a time; `seconds` is how long `run` took.
  std::function<void(int item, std::any&& result, double seconds)> collect;
  // Each item is a whole job for the rank that takes it (a model's subgraph, a dataset's
  // program): inside `run` this process is a single rank (rank() 0 of ranks() 1), so the
  // collective steps of a search there stay in this process and use its threads. Needs
  // threadsPerRank 1.
  bool alone = false;
};

// What one rank did.
struct RankShare {
  int threads = 0;
  int items = 0;
  double busySeconds = 0;  // summed over its threads
  double seconds = 0;      // wall time until its last item was done
};

// Collective: every rank calls it with the same `run`. Rank 0 stops dealing once `stop` holds
// there (items under way finish; `run` sees the caller's own stop flag). Returns on rank 0 the
// share of every rank in rank order; on the other ranks, their own only.
std::vector<RankShare> runOnEveryRank(const WorkItems& work, const std::atomic<bool>& stop);

// How a list of whole jobs (a model's subgraphs, a dataset's programs) goes over the ranks:
// each job dealt out whole to one rank (WorkItems::alone), or the jobs one after another with
// each job's own search spread over every rank.
enum class Spread { kWholeItems, kEachSearch };

// The --spread flag: "items" and "searches" name the two; "auto" deals whole items when there
// are at least as many as ranks (every rank gets one) and spreads each search otherwise (a
// model of three subgraphs on eight ranks). Throws std::invalid_argument naming the accepted
// values, which the caller turns into its flag's error.
Spread chooseSpread(const std::string& flag, size_t itemCount, int rankCount);
const char* spreadName(Spread spread);

// Collective: `work` under `spread`. kWholeItems is runOnEveryRank with `alone` (one item at a
// time per rank) and returns what it returns; kEachSearch runs every item on every rank in
// order (`run`'s collective steps spread it), collects rank 0's results and returns this
// rank's share only (each search records its ranks in its own summary).
std::vector<RankShare> runItems(WorkItems work, Spread spread);

}  // namespace mugraph::distributed
