#include "driver/variant_files.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "graph/error.h"
#include "graph/files.h"
#include "graph/hash.h"

namespace mugraph::driver {

codegen::GeneratedCode variantCode(const graph::Schedule& schedule, const plan::Target& target) {
  codegen::GenerateOptions options;
  options.archs = {target.computeCapability};
  return codegen::generateCode(schedule, options);
}

std::string gridsOf(const graph::KernelGraph& graph) {
  std::string grids;
  for (const graph::KernelOp& op : graph.ops) {
    if (!grids.empty()) grids += " ";
    grids += op.block ? std::to_string(op.block->blocks()) : "-";
  }
  return grids;
}

std::string whyNoVariants(const search::SearchResult& result, const ProfileRanking& ranking,
                          const RangeRun* range) {
  if (!result.variants.empty()) return "";
  const search::SearchSummary& s = result.summary;
  if (range && !range->dropped.empty()) {
    return std::to_string(range->dropped.size()) +
           " variant(s) verified at the reference length, each not equivalent at some length of "
           "the range (summary.json: range.dropped_by_range_check)";
  }
  if (range && !range->droppedOnGpu.empty()) {
    return std::to_string(range->droppedOnGpu.size()) +
           " variant(s) dropped by --profile over the range (summary.json: "
           "range.dropped_on_gpu): " + range->droppedOnGpu.front();
  }
  if (!ranking.dropped.empty()) {
    return std::to_string(ranking.dropped.size()) +
           " verified variant(s), each dropped: its GPU result does not match the interpreter";
  }
  const std::string stopped = s.stoppedByTimeLimit
                                  ? " before the time limit stopped it (resume with --checkpoint F "
                                    "--resume, or raise --time-limit)"
                                  : "";
  if (s.candidates == 0) {
    std::string pruned;
    for (const auto& [reason, count] : search::pruneCountsByName(s.stats.pruned)) {
      if (count == 0) continue;
      pruned += (pruned.empty() ? "" : ", ") + reason + " " + std::to_string(count);
    }
    return "the search found no candidate within its limits" + stopped +
           " (pruned: " + (pruned.empty() ? "nothing" : pruned) +
           "; the limits are --max-kernels, --max-block-graphs, --max-block-ops, --max-blocks)";
  }
  return std::to_string(s.candidates) +
         " candidate(s), none verified: " + std::to_string(s.rejected) +
         " refuted by the verifier, " + std::to_string(s.notEmittable) +
         " whose plan does not fit the target" + stopped;
}

namespace {

// What each rank of the run did (one entry without MPI): the summary's record of the work's
// spread, never compared across runs (times differ).
nlohmann::json ranksJson(const std::vector<search::RankWork>& ranks) {
  nlohmann::json json = nlohmann::json::array();
  for (size_t r = 0; r < ranks.size(); ++r) {
    const search::RankWork& w = ranks[r];
    json.push_back({{"rank", r},
                    {"threads", w.threads},
                    {"subtrees", w.subtrees},
                    {"verifications", w.verifications},
                    {"busy_seconds", w.busySeconds},
                    {"seconds", w.seconds},
                    {"profiled", w.profiled}});
  }
  return json;
}

// Where the run's time went: what bounds its speedup on more ranks (the largest subtree, the
// merge on rank 0, the verification; docs/distributed_search.md).
nlohmann::json distributionJson(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  double total = 0;
  for (double s : seconds) total += s;
  const auto quantile = [&](double q) {
    return seconds.empty() ? 0.0 : seconds[static_cast<size_t>(q * (seconds.size() - 1))];
  };
  return {{"count", seconds.size()}, {"total", total},       {"max", quantile(1)},
          {"p50", quantile(0.5)},    {"p90", quantile(0.9)}, {"p99", quantile(0.99)}};
}

nlohmann::json workJson(const search::WorkTimes& times) {
  return {{"subtree_seconds", distributionJson(times.subtreeSeconds)},
          {"candidate_seconds", distributionJson(times.candidateSeconds)},
          {"enumeration_seconds", times.enumerationSeconds},
          {"merge_seconds", times.mergeSeconds},
          {"verification_seconds", times.verificationSeconds}};
}

}  // namespace

nlohmann::json summaryJson(const search::SearchResult& result, const ProfileRanking& ranking,
                           const graph::Program* program, const RangeRun* range) {
  const search::SearchSummary& s = result.summary;
  nlohmann::json pruned = nlohmann::json::object();
  for (const auto& [name, count] : search::pruneCountsByName(s.stats.pruned)) pruned[name] = count;
  nlohmann::json variants = nlohmann::json::array();
  for (const search::VerifiedVariant& v : result.variants) {
    variants.push_back({{"name", v.name},
                        {"hash", graph::hashHex(v.hash)},
                        {"cost", v.cost.microseconds},
                        {"level", v.verification.level},
                        {"false_accept_bound", v.verification.falseAcceptBound},
                        {"kernels", v.schedule.graph.ops.size()},
                        {"grids", gridsOf(v.schedule.graph)}});
    const auto measured = ranking.measured.find(v.name);
    if (measured != ranking.measured.end()) variants.back()["measured_us"] = measured->second;
    if (v.joinedFromPieces > 0) variants.back()["joined_from_pieces"] = v.joinedFromPieces;
    if (!v.verification.detail.empty()) {
      variants.back()["verification_detail"] = v.verification.detail;
    }
    if (!v.verification.scaledTwin.empty()) {
      variants.back()["scaled_twin"] = v.verification.scaledTwin;
    }
    if (range) variants.back().update(rangeVariantJson(range->variants.at(v.name)));
  }
  nlohmann::json summary = {
      {"states", s.stats.states},
      {"pruned", pruned},
      {"candidates", s.candidates},
      {"verified", s.verified},
      {"rejected", s.rejected},
      {"not_emittable", s.notEmittable},
      {"seconds", s.seconds},
      {"complete", s.complete},
      {"stopped_by_time_limit", s.stoppedByTimeLimit},
      {"subtrees", s.subtrees},
      {"subtrees_completed", s.subtreesCompleted},
      {"forms", s.forms},
      {"oracle",
       {{"queries", s.oracle.queries},
        {"cache_hits", s.oracle.cacheHits},
        {"z3_queries", s.oracle.z3Queries},
        {"timeouts", s.oracle.timeouts},
        {"past_deadline", s.oracle.pastDeadline}}},
      {"ranked_by",
       ranking.measured.empty() && ranking.dropped.empty() ? "cost_model" : "measured_gpu_time"},
      {"variants", variants},
      {"ranks", ranksJson(s.ranks)},
      {"work", workJson(s.times)}};
  if (range && program) {
    summary["ranked_by"] = range->measured ? "measured_gpu_time_over_range" : "cost_model_over_range";
    summary["range"] = rangeSummaryJson(*program, *range);
  }
  if (!ranking.dropped.empty()) {
    nlohmann::json dropped = nlohmann::json::array();
    for (const DroppedVariant& d : ranking.dropped) {
      nlohmann::json entry = {{"name", d.name},
                              {"hash", graph::hashHex(d.hash)},
                              {"max_rel_error", d.maxRelError},
                              {"seed", d.seed}};
      if (!d.folder.empty()) entry["folder"] = d.folder;
      dropped.push_back(std::move(entry));
    }
    summary["dropped_on_gpu"] = dropped;
  }
  // A program searched in pieces: the counts above are summed over the pieces' searches.
  if (s.pieces > 0) summary["pieces"] = s.pieces;
  const std::string why = whyNoVariants(result, ranking, range);
  if (!why.empty()) summary["no_variants"] = why;
  return summary;
}

int writeVariants(const search::SearchResult& result, const ProfileRanking& ranking,
                  const plan::Target& target, const std::string& out, int threads,
                  const graph::Program* program, const RangeRun* range) {
  int withoutCode = 0;
  std::filesystem::create_directories(out);
  // The variants whose code is generated here.
  std::vector<const search::VerifiedVariant*> todo;
  for (const search::VerifiedVariant& v : result.variants) {
    // --profile already generated (and timed) the code of every variant rank 0 measured, in
    // this same folder (another rank's went to a scratch folder of its own).
    const auto profiled = ranking.measured.find(v.name);
    if (profiled != ranking.measured.end() && std::isfinite(profiled->second) &&
        ranking.written.count(v.name)) {
      continue;
    }
    // --profile of a dynamic program generated (and timed) its kernels here too.
    if (range && range->measured && range->variants.count(v.name) &&
        !range->variants.at(v.name).measured.empty()) {
      continue;
    }
    todo.push_back(&v);
  }
  // Each variant's code is independent of the others' (NVRTC compiles separate programs
  // concurrently): generated on the search's threads, then written in ranking order, so the
  // files and messages do not depend on the thread count.
  std::vector<std::optional<codegen::GeneratedCode>> codes(todo.size());
  std::vector<std::exception_ptr> failures(todo.size());
  tbb::task_arena arena(threads > 0 ? threads : tbb::task_arena::automatic);
  arena.execute([&] {
    tbb::parallel_for(size_t{0}, todo.size(), [&](size_t i) {
      try {
        codes[i] = variantCode(todo[i]->schedule, target);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    });
  });
  for (size_t i = 0; i < todo.size(); ++i) {
    const search::VerifiedVariant& v = *todo[i];
    const std::string dir = out + "/" + v.name;
    std::filesystem::create_directories(dir);
    // A dynamic program's variant gets kernels that take the lengths (one PTX for the range).
    const bool dynamic = !v.schedule.program.dims.empty();
    try {
      if (failures[i]) std::rethrow_exception(failures[i]);
      codegen::writeGeneratedCode(*codes[i], dir);  // + schedule.json
      codes[i].reset();
    } catch (const std::exception& e) {
      graph::saveSchedule(dir + "/schedule.json", v.schedule);
      if (dynamic && dynamic_cast<const UserError*>(&e)) {
        // A kernel that cannot take the lengths yet: the schedule alone, replayed per length.
        std::cerr << "mugraph: " << v.name << ": no kernels that take the lengths (" << e.what()
                  << "); replay it per length: mugraph replay " << dir
                  << "/schedule.json --dim NAME=N --static\n";
        continue;
      }
      std::cerr << "mugraph: internal error: " << v.name
                << ": verified, but no code was generated: " << e.what() << "\n";
      ++withoutCode;
    }
  }
  // The dispatch over the lengths, where every variant it names has kernels that take them
  // (none from an earlier run is left behind).
  std::filesystem::remove(out + "/dispatch.json");
  if (range && program && !range->dispatch.empty()) {
    std::string missing;
    for (const DispatchBucket& b : range->dispatch) {
      if (!std::filesystem::exists(out + "/" + b.variant + "/manifest.json")) missing = b.variant;
    }
    if (missing.empty()) {
      graph::writeFileAtomic(out + "/dispatch.json", dispatchJson(*program, *range).dump(2) + "\n");
    } else {
      std::cerr << "mugraph: no dispatch.json: variant " << missing
                << " of one of its buckets has no kernels that take the lengths\n";
    }
  }
  graph::writeFileAtomic(out + "/summary.json",
                         summaryJson(result, ranking, program, range).dump(2) + "\n");
  return withoutCode;
}

}  // namespace mugraph::driver
