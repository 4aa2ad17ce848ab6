#include "search/superoptimize_pieces.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>

#include "graph/hash.h"
#include "search/progress.h"
#include "search/split_program.h"
#include "verify/range_check.h"

namespace mugraph::search {
namespace {


// Appends `part`'s kernels to `joined`. Its inputs are tensors `joined` already has (by
// name); its outputs keep their names, for later pieces to read; its own intermediates get
// names no other tensor has.
void appendPiece(graph::KernelGraph& joined, std::map<std::string, graph::TensorId>& byName,
                 std::set<std::string>& taken, const graph::KernelGraph& part, int index) {
  std::vector<graph::TensorId> to(part.tensors.size(), -1);
  for (graph::TensorId t : part.inputs) to[t] = byName.at(part.tensors[t].name);
  const std::set<graph::TensorId> outputs(part.outputs.begin(), part.outputs.end());
  const auto unique = [&](const std::string& name) {
    std::string candidate = name;
    for (int k = 0; taken.count(candidate); ++k) {
      candidate = name + "_p" + std::to_string(index) + (k ? "_" + std::to_string(k) : "");
    }
    taken.insert(candidate);
    return candidate;
  };
  for (size_t t = 0; t < part.tensors.size(); ++t) {
    if (to[t] >= 0) continue;
    graph::TensorDesc desc = part.tensors[t];
    if (!outputs.count(static_cast<graph::TensorId>(t))) desc.name = unique(desc.name);
    to[t] = static_cast<graph::TensorId>(joined.tensors.size());
    byName[desc.name] = to[t];
    joined.tensors.push_back(std::move(desc));
  }
  std::set<std::string> kernelNames;
  for (const graph::KernelOp& op : joined.ops) kernelNames.insert(op.name);
  for (graph::KernelOp op : part.ops) {
    for (graph::TensorId& t : op.inputs) t = to[t];
    for (graph::TensorId& t : op.outputs) t = to[t];
    if (!op.name.empty() && kernelNames.count(op.name)) {
      op.name += "_p" + std::to_string(index);
    }
    kernelNames.insert(op.name);
    joined.ops.push_back(std::move(op));
  }
}

// Each piece's best variant joined into one schedule of `program` (kernels in piece order).
graph::Schedule joinPieces(const graph::Program& program,
                           const std::vector<VerifiedVariant>& best) {
  graph::Schedule joined;
  joined.program = program;
  graph::KernelGraph& whole = joined.graph;
  whole.dims = program.dims;  // the pieces' tensors name them by index, as the program's do
  std::map<std::string, graph::TensorId> byName;
  std::set<std::string> taken;
  for (const graph::TensorDesc& t : program.tensors) taken.insert(t.name);
  for (graph::TensorId t : program.inputs) {
    byName[program.tensors[t].name] = static_cast<graph::TensorId>(whole.tensors.size());
    whole.inputs.push_back(static_cast<graph::TensorId>(whole.tensors.size()));
    whole.tensors.push_back(program.tensors[t]);
  }
  for (size_t i = 0; i < best.size(); ++i) {
    appendPiece(whole, byName, taken, best[i].schedule.graph, static_cast<int>(i));
  }
  for (graph::TensorId t : program.outputs) {
    whole.outputs.push_back(byName.at(program.tensors[t].name));
  }
  joined.name = program.name + ".v" + graph::hashHex(graph::scheduleHash(joined));
  whole.name = joined.name;
  return joined;
}

// The record of a join that swaps one piece's variant in a verified join (`whole`): the piece's
// variant it replaced (`before`) and the one it put in (`after`) each verified against the
// piece's program. Either false accept makes the swapped join's verdict wrong: the bounds add.
VerificationRecord composedRecord(const VerificationRecord& whole, const VerificationRecord& before,
                                  const VerificationRecord& after, size_t piece) {
  VerificationRecord record = whole;
  const bool floatOnly =
      whole.level == "float-only" || before.level == "float-only" || after.level == "float-only";
  record.level = floatOnly ? "float-only" : "finite-field";
  record.falseAcceptBound =
      std::min(1.0, whole.falseAcceptBound + before.falseAcceptBound + after.falseAcceptBound);
  record.trials = std::min({whole.trials, before.trials, after.trials});
  record.maxRelError = std::max({whole.maxRelError, before.maxRelError, after.maxRelError});
  record.detail =
      "by composition: the join of every piece's best, verified against the whole "
      "program, with piece " +
      std::to_string(piece) + "'s kernels swapped for others verified against that piece's program";
  return record;
}

CostEstimate totalCost(const std::vector<VerifiedVariant>& best) {
  CostEstimate cost;
  for (const VerifiedVariant& v : best) {
    cost.microseconds += v.cost.microseconds;
    cost.bytes += v.cost.bytes;
    cost.flops += v.cost.flops;
    cost.kernels += v.cost.kernels;
  }
  return cost;
}

// Joins that swap one piece's best for one of its alternatives (superoptimize_pieces.h,
// kPieceAlternatives), the cheapest swaps first, until `result` holds maxVariants joins.
// result.variants[0] is the verified join of `best`.
void addSwappedJoins(const graph::Program& program, const std::vector<ProgramPiece>& pieces,
                     const std::vector<VerifiedVariant>& best,
                     const std::vector<std::vector<VerifiedVariant>>& others,
                     const SearchOptions& options, SearchResult& result) {
  struct Swap {
    size_t piece, alternative;
    double extraMicroseconds;
  };
  std::vector<Swap> swaps;
  for (size_t p = 0; p < others.size(); ++p) {
    for (size_t a = 0; a < others[p].size(); ++a) {
      swaps.push_back({p, a, others[p][a].cost.microseconds - best[p].cost.microseconds});
    }
  }
  std::stable_sort(swaps.begin(), swaps.end(), [](const Swap& x, const Swap& y) {
    return x.extraMicroseconds < y.extraMicroseconds;
  });
  const VerificationRecord whole = result.variants.front().verification;
  std::map<size_t, VerificationRecord> bestAlone;  // a piece's best against its own program
  // A piece's variant against the piece's own program: as its search verified it (a dynamic
  // program's pieces), else verified here.
  ProgressLine progress(options.progress);
  const auto verifiedAlone = [&](size_t p, const VerifiedVariant& v) {
    if (acceptable(v.verification)) return v.verification;
    progress.update("checking " + v.name + " against piece " + std::to_string(p + 1) + " of " +
                    std::to_string(pieces.size()) + " for another join (" +
                    std::to_string(result.variants.size()) + " of " +
                    std::to_string(options.config.maxVariants) + " joins so far)");
    VerificationRecord record =
        verifySchedule(pieces[p].program, v.schedule.graph, options.verifySeed, nullptr);
    if (!acceptable(record)) ++result.summary.rejected;
    return record;
  };
  for (const Swap& swap : swaps) {
    if (result.variants.size() >= static_cast<size_t>(options.config.maxVariants)) break;
    if (!bestAlone.count(swap.piece)) {
      bestAlone[swap.piece] = verifiedAlone(swap.piece, best[swap.piece]);
    }
    if (!acceptable(bestAlone[swap.piece])) continue;
    const VerifiedVariant& alternative = others[swap.piece][swap.alternative];
    const VerificationRecord own = verifiedAlone(swap.piece, alternative);
    if (!acceptable(own)) continue;
    std::vector<VerifiedVariant> chosen = best;
    chosen[swap.piece] = alternative;
    VerifiedVariant variant;
    variant.schedule = joinPieces(program, chosen);
    variant.hash = graph::scheduleHash(variant.schedule);
    variant.name = graph::variantName(variant.schedule);
    variant.cost = totalCost(chosen);
    variant.joinedFromPieces = static_cast<int>(pieces.size());
    variant.verification = composedRecord(whole, bestAlone[swap.piece], own, swap.piece);
    result.variants.push_back(std::move(variant));
  }
  progress.finish();
}

}  // namespace

void addUp(SearchSummary& total, const SearchSummary& part) {
  total.forms += part.forms;
  total.pieces = std::max(total.pieces, part.pieces);
  total.subtrees += part.subtrees;
  total.subtreesCompleted += part.subtreesCompleted;
  total.stoppedByTimeLimit = total.stoppedByTimeLimit || part.stoppedByTimeLimit;
  total.stats.states += part.stats.states;
  for (int r = 0; r < kPruneReasons; ++r) total.stats.pruned[r] += part.stats.pruned[r];
  total.candidates += part.candidates;
  total.rejected += part.rejected;
  total.notEmittable += part.notEmittable;
  total.oracle.queries += part.oracle.queries;
  total.oracle.cacheHits += part.oracle.cacheHits;
  total.oracle.z3Queries += part.oracle.z3Queries;
  total.oracle.timeouts += part.oracle.timeouts;
  total.oracle.pastDeadline += part.oracle.pastDeadline;
}

SearchResult superoptimizeInPieces(const graph::Program& program, const SearchOptions& options,
                                   const PieceLimits& limits) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<ProgramPiece> pieces = splitProgram(program, limits);
  SearchOptions pieceOptions = options;
  pieceOptions.checkpointPath.clear();
  pieceOptions.resume = false;
  // Each piece's best (the first is the cheapest), and alternatives for further joins
  // (kPieceAlternatives).
  const bool alternatives = options.config.maxVariants > 1;
  pieceOptions.config.maxVariants = alternatives ? kPieceAlternatives : 1;
  // The joined schedule is verified against the whole program; a piece's own verification is
  // needed only where that fails.
  pieceOptions.verifyVariants = false;
  // The time limit is the whole program's: what is left is shared by the pieces left.
  const auto shareOfTimeLeft = [&](size_t piecesLeft) {
    if (options.timeLimitSeconds <= 0) return 0.0;
    const double spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Zero would mean no limit: a piece out of time still gets a moment.
    return std::max(
        std::max(options.timeLimitSeconds - spent, 0.0) / static_cast<double>(piecesLeft), 0.5);
  };

  SearchResult result;
  SearchSummary& summary = result.summary;
  summary.pieces = static_cast<int>(pieces.size());
  // A dynamic program's pieces: a variant verified at the reference length may still be wrong
  // at another length, which the whole program's range check (the driver's) would find only
  // after the join. Each piece's verified variants are checked over its range here, its first
  // equivalent at every length taken.
  const bool dynamic = !program.dims.empty();
  if (dynamic) {
    pieceOptions.config.maxVariants = kDynamicPieceVariants;
    pieceOptions.verifyVariants = true;
  }
  const auto firstOverRange = [&](std::vector<VerifiedVariant>& variants) {
    for (VerifiedVariant& v : variants) {
      verify::EquivalenceOptions check;
      check.seed = options.verifySeed;
      if (!dynamic || verify::checkOverRange(v.schedule, check).equivalent) return &v;
      ++summary.rejected;
    }
    return static_cast<VerifiedVariant*>(nullptr);
  };

  std::vector<VerifiedVariant> best;
  std::vector<std::vector<VerifiedVariant>> others(pieces.size());  // unverified alternatives
  for (size_t p = 0; p < pieces.size(); ++p) {
    pieceOptions.timeLimitSeconds = shareOfTimeLeft(pieces.size() - p);
    SearchResult found = superoptimize(pieces[p].program, pieceOptions);
    addUp(summary, found.summary);
    if (found.variants.empty() && found.summary.stoppedByTimeLimit) {
      // Its share ran out before any candidate: once more, with kPieceRetryFactor times it.
      SearchOptions longer = pieceOptions;
      longer.timeLimitSeconds =
          std::max(kPieceRetryFactor * pieceOptions.timeLimitSeconds, kPieceRetryMinimumSeconds);
      found = superoptimize(pieces[p].program, longer);
      addUp(summary, found.summary);
    }
    VerifiedVariant* chosen = firstOverRange(found.variants);
    if (!chosen) break;  // no schedule of the whole program without this piece
    best.push_back(*chosen);
    if (!alternatives) continue;
    // Those ranked after the chosen one (before it: not equivalent over a dynamic range). A
    // dynamic program's joins are each checked over the range by the driver, as every variant.
    for (VerifiedVariant* v = chosen + 1; v != found.variants.data() + found.variants.size() &&
                                          others[p].size() + 1 < kPieceAlternatives;
         ++v) {
      if (v->cost.microseconds <= kAlternativeCostRatio * best.back().cost.microseconds) {
        others[p].push_back(std::move(*v));
      }
    }
  }
  summary.complete = summary.subtreesCompleted == summary.subtrees;
  const auto finish = [&] {
    summary.verified = result.variants.size();
    summary.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  };
  if (best.size() != pieces.size()) return finish();

  VerifiedVariant variant;
  graph::Schedule joined = joinPieces(program, best);
  if (options.verifyVariants) {
    // The search is done; the check of the join against the whole program follows, unbounded
    // by the time limit (--help says so), and is the long silent part of a large program.
    ProgressLine progress(options.progress);
    progress.update("checking the join of " + std::to_string(pieces.size()) +
                    " pieces against the whole program (the time limit bounds the search only)");
    const auto checkStart = std::chrono::steady_clock::now();
    variant.verification = verifySchedule(program, joined.graph, options.verifySeed, nullptr);
    progress.update(
        "checked the join of " + std::to_string(pieces.size()) + " pieces in " +
        std::to_string(static_cast<int>(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - checkStart).count())) +
        " s");
    progress.finish();
    if (!acceptable(variant.verification)) {
      // Some piece's best is wrong: each piece's variant is verified, a refuted one replaced
      // by its piece's best verified one, and the join verified again.
      ++summary.rejected;
      pieceOptions.verifyVariants = true;
      for (size_t p = 0; p < pieces.size(); ++p) {
        const VerificationRecord own =
            verifySchedule(pieces[p].program, best[p].schedule.graph, options.verifySeed, nullptr);
        if (acceptable(own)) continue;
        ++summary.rejected;
        pieceOptions.timeLimitSeconds = shareOfTimeLeft(pieces.size() - p);
        SearchResult found = superoptimize(pieces[p].program, pieceOptions);
        VerifiedVariant* chosen = firstOverRange(found.variants);
        if (!chosen) return finish();
        best[p] = std::move(*chosen);
      }
      joined = joinPieces(program, best);
      variant.verification = verifySchedule(program, joined.graph, options.verifySeed, nullptr);
      if (!acceptable(variant.verification)) {
        ++summary.rejected;
        return finish();
      }
    }
  } else {
    variant.verification.detail = "not verified";
  }
  variant.schedule = std::move(joined);
  variant.hash = graph::scheduleHash(variant.schedule);
  variant.name = graph::variantName(variant.schedule);
  variant.cost = totalCost(best);
  variant.joinedFromPieces = static_cast<int>(pieces.size());
  result.variants.push_back(std::move(variant));
  if (options.verifyVariants) addSwappedJoins(program, pieces, best, others, options, result);
  return finish();
}

}  // namespace mugraph::search
