// runModel (driver/superoptimize.h): imports the model (onnx_import/), searches every subgraph
// as a program of its own, and writes out/<subgraph>/ exactly as a program's run does, plus
// out/summary.json: the subgraphs with their ONNX nodes, program, verified count and best
// variant (or why there is none), and every node left to the framework with its reason. The
// summary is rewritten after each subgraph, so "subgraphs" holds those that finished of
// "subgraphs_total". Under mpirun the subgraphs are dealt out whole to the ranks, or searched one
// after another over every rank (--spread, docs/distributed_search.md); either way a subgraph's
// folder is written in a scratch folder and rank 0 alone puts it in place, whole.
#include <tbb/info.h>
#include <unistd.h>

#include <algorithm>
#include <any>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "distributed/folder_bytes.h"
#include "distributed/ranks.h"
#include "distributed/work_queue.h"
#include "driver/superoptimize.h"
#include "graph/display_text.h"
#include "graph/error.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "graph/program_text.h"
#include "onnx_import/import_model.h"
#include "onnx_import/partition_json.h"

namespace mugraph::driver {
namespace {

onnx_import::DimPins dimPins(const std::vector<std::string>& flags) {
  onnx_import::DimPins pins;
  for (const std::string& flag : flags) {
    const auto [name, value] = onnx_import::parseDimPin(flag);
    if (pins.count(name)) throw UserError("--dim", "'" + name + "' is pinned twice");
    pins[name] = value;
  }
  return pins;
}

onnx_import::DimRanges dimRanges(const std::vector<std::string>& flags) {
  onnx_import::DimRanges ranges;
  for (const std::string& flag : flags) {
    const auto [name, range] = onnx_import::parseDimRange(flag);
    if (ranges.count(name)) throw UserError("--dim-range", "'" + name + "' is given twice");
    ranges[name] = range;
  }
  return ranges;
}

nlohmann::json bestJson(const search::SearchResult& result, const Measurements& measured) {
  if (result.variants.empty()) return nullptr;
  const search::VerifiedVariant& v = result.variants.front();
  nlohmann::json best = {{"name", v.name},
                         {"hash", graph::hashHex(v.hash)},
                         {"cost", v.cost.microseconds},
                         {"level", v.verification.level},
                         {"false_accept_bound", v.verification.falseAcceptBound},
                         {"kernels", v.schedule.graph.ops.size()}};
  if (measured.count(v.name)) best["measured_us"] = measured.at(v.name);
  if (!v.verification.scaledTwin.empty()) best["scaled_twin"] = v.verification.scaledTwin;
  return best;
}

// What searching one subgraph gives rank 0: its summary entry, and the files of its folder.
struct SubgraphOutcome {
  nlohmann::json entry;
  std::string files;  // distributed/folder_bytes.h; empty when nothing is written
};

// A private folder for one subgraph's files on the rank that searches it.
std::string scratchFolder(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("mugraph-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

// One subgraph's entry of the model summary, its search and its files (written in a scratch
// folder, handed to rank 0 as bytes).
SubgraphOutcome runSubgraph(const onnx_import::Subgraph& s, const RunOptions& options,
                            const runtime::CudaDriver* gpu, SearchReuse& reuse,
                            const graph::Program* searchAs) {
  SubgraphOutcome outcome;
  nlohmann::json& entry = outcome.entry;
  entry = onnx_import::subgraphJson(s);
  RunOptions subgraph = options;
  subgraph.out = options.out.empty() || !distributed::isRoot() ? "" : scratchFolder(s.name);
  subgraph.progress = false;
  subgraph.resume = false;  // a model resumes whole subgraphs (finishedBefore)
  if (!subgraph.out.empty()) {
    std::filesystem::remove_all(subgraph.out);
    std::filesystem::create_directories(subgraph.out);
    graph::saveProgram(subgraph.out + "/program.mg", s.program);
    entry["program"] = s.name + "/program.mg";
  }
  try {
    const ProgramRun run = superoptimizeProgram(s.program, subgraph, gpu, &reuse, searchAs);
    if (run.summary.contains("search_reused_from")) {
      entry["search_reused_from"] = run.summary.at("search_reused_from");
    }
    const std::vector<search::VerifiedVariant>& variants = run.result.variants;
    entry["verified"] = variants.size();
    entry["best"] = bestJson(run.result, run.ranking.measured);
    entry["seconds"] = run.result.summary.seconds;
    entry["complete"] = run.result.summary.complete;
    if (run.withoutCode > 0) entry["without_code"] = run.withoutCode;
    if (!run.noVariants.empty()) entry["no_variants"] = run.noVariants;
  } catch (const UserError& e) {
    // A dynamic subgraph no length-independent schedule covers: the subgraph has no variant.
    entry["verified"] = 0;
    entry["best"] = nullptr;
    entry["no_variants"] = graph::escapeForDisplay(e.what());
  } catch (const std::exception& e) {
    entry["verified"] = 0;
    entry["best"] = nullptr;
    entry["error"] = graph::escapeForDisplay(e.what());  // valid UTF-8 in summary.json
  }
  entry["rank"] = distributed::rankInJob();
  entry["threads"] = options.threads > 0 ? options.threads : tbb::info::default_concurrency();
  if (!subgraph.out.empty()) {
    outcome.files = distributed::packFolder(subgraph.out);
    std::filesystem::remove_all(subgraph.out);
  }
  return outcome;
}

// The line rank 0 prints when a subgraph is done, `seconds` after it was dealt.
std::string finishedLine(const nlohmann::json& entry, double seconds) {
  const std::string name = entry.at("name").get<std::string>();
  if (entry.contains("error")) {
    return name + ": internal error: " + entry.at("error").get<std::string>();
  }
  std::string line = name + ": " + std::to_string(entry.at("verified").get<int>()) + " verified";
  if (entry.contains("no_variants")) {
    line += " (" + entry.at("no_variants").get<std::string>() + ")";
  } else {
    line += ", best " + entry.at("best").at("name").get<std::string>() + " (" +
            entry.at("best").at("level").get<std::string>() + ")";
  }
  if (entry.contains("search_reused_from")) {
    line += ", the search of " + entry.at("search_reused_from").get<std::string>() + " renamed";
  }
  return line + ", " + std::to_string(static_cast<int>(seconds + 0.5)) + " s (rank " +
         std::to_string(entry.at("rank").get<int>()) + ")";
}

// The counts of the exit code, from the entries: one definition for a run and a resumed one.
void countOutcomes(ModelRun& run) {
  for (const nlohmann::json& entry : run.summary.at("subgraphs")) {
    if (entry.contains("error")) ++run.internalErrors;
    run.internalErrors += entry.value("without_code", 0);
    if (entry.contains("no_variants")) ++run.subgraphsWithoutVariants;
  }
}

// --resume: the entries of out/summary.json whose subgraph is the same program and whose
// folder is there, by subgraph index. A folder is renamed into place whole, so one that exists
// is complete.
std::map<size_t, nlohmann::json> finishedBefore(const onnx_import::ImportedModel& model,
                                                const std::string& out) {
  if (out.empty()) throw UserError("--resume", "for a model, resumes from --out DIR");
  const std::string path = out + "/summary.json";
  if (!std::filesystem::exists(path)) return {};
  nlohmann::json saved;
  try {
    saved = nlohmann::json::parse(graph::readFileText(path));
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path, std::string("is not a model summary: ") + e.what());
  }
  if (!saved.is_object() || saved.value("model", "") != model.path ||
      !saved.contains("subgraphs") || !saved.at("subgraphs").is_array()) {
    throw UserError("--resume", path + " is not the summary of " + model.path);
  }
  std::map<size_t, nlohmann::json> finished;
  for (const nlohmann::json& entry : saved.at("subgraphs")) {
    for (size_t i = 0; i < model.subgraphs.size(); ++i) {
      const onnx_import::Subgraph& s = model.subgraphs[i];
      if (!entry.is_object() || entry.value("name", "") != s.name) continue;
      const std::string program = out + "/" + s.name + "/program.mg";
      if (std::filesystem::exists(program) &&
          graph::readFileText(program) == graph::programToText(s.program)) {
        finished[i] = entry;
      }
    }
  }
  return finished;
}

// Rank 0: puts a subgraph's folder in place (a scratch folder, then one rename).
void installFolder(const std::string& out, const std::string& name, const std::string& files) {
  const std::string staging = out + "/.staging-" + name;
  std::filesystem::remove_all(staging);
  distributed::unpackFolder(files, staging);
  std::filesystem::remove_all(out + "/" + name);
  std::filesystem::rename(staging, out + "/" + name);
}

std::string encodeOutcome(const SubgraphOutcome& outcome) {
  const std::string entry = outcome.entry.dump();
  return std::to_string(entry.size()) + "\n" + entry + outcome.files;
}

SubgraphOutcome decodeOutcome(const std::string& bytes) {
  const size_t newline = bytes.find('\n');
  const size_t size = std::stoull(bytes.substr(0, newline));
  return {nlohmann::json::parse(bytes.substr(newline + 1, size)), bytes.substr(newline + 1 + size)};
}

// Per rank: the subgraphs it searched, the threads its searches used, its busy time and when
// it finished its last subgraph.
nlohmann::json ranksJson(const std::vector<distributed::RankShare>& shares,
                         const std::map<size_t, nlohmann::json>& finished) {
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t r = 0; r < shares.size(); ++r) {
    int threads = 0;
    for (const auto& [index, entry] : finished) {
      if (entry.value("rank", -1) == static_cast<int>(r)) {
        threads = std::max(threads, entry.value("threads", 0));
      }
    }
    ranks.push_back({{"threads", threads},
                     {"subgraphs", shares[r].items},
                     {"busy_seconds", shares[r].busySeconds},
                     {"seconds", shares[r].seconds}});
  }
  return ranks;
}

// The subgraphs not finished, as rank 0 (which read the summary for --resume) lists them, on
// every rank: with each search spread, every rank goes through them.
std::vector<int> subgraphsToSearch(size_t total, const std::map<size_t, nlohmann::json>& finished) {
  std::string todo;
  for (size_t i = 0; i < total; ++i) {
    if (!finished.count(i)) todo += std::to_string(i) + " ";
  }
  std::istringstream dealt(distributed::broadcast(todo));
  std::vector<int> items;
  for (int item = 0; dealt >> item;) items.push_back(item);
  return items;
}

}  // namespace

ModelRun runModel(const RunOptions& options) {
  if (!options.checkpoint.empty()) {
    throw UserError("--checkpoint",
                    "applies to one program; a model resumes its finished subgraphs from --out "
                    "with --resume");
  }
  const onnx_import::ImportedModel model = onnx_import::importModel(
      options.program, dimPins(options.dims), dimRanges(options.dimRanges));
  const distributed::Spread spread = [&] {
    try {
      return distributed::chooseSpread(options.spread, model.subgraphs.size(),
                                       distributed::ranks());
    } catch (const std::invalid_argument& e) {
      throw UserError("--spread", e.what());
    }
  }();
  // Whole subgraphs: every rank writes (into scratch folders) and profiles its own; each search
  // spread: rank 0 alone writes (driver/run_options.h), and every rank with a GPU of its own
  // times that search's variants.
  const RunOptions ranked =
      spread == distributed::Spread::kWholeItems ? options : onThisRank(options);
  // Each search spread: rank 0 needs a GPU, the others time variants on one of their own.
  const std::unique_ptr<runtime::CudaDriver> gpu =
      spread == distributed::Spread::kWholeItems || distributed::isRoot()
          ? openGpuForProfile(ranked.profile)
          : openGpuOfItsOwn(ranked.profile);
  ModelRun run;
  const size_t total = model.subgraphs.size();
  run.summary = {{"model", model.path},
                 {"opset", model.opset},
                 {"subgraphs_total", total},
                 {"subgraphs", nlohmann::json::array()},
                 {"unsupported", onnx_import::leftOutJson(model)}};
  std::map<size_t, nlohmann::json> finished;
  if (options.resume && distributed::isRoot()) finished = finishedBefore(model, options.out);
  // Written before the first search and again after each subgraph, in subgraph order, so a run
  // that stops part way leaves the summary of every subgraph it finished.
  const auto writeSummary = [&] {
    run.summary["subgraphs"] = nlohmann::json::array();
    for (const auto& [index, entry] : finished) run.summary["subgraphs"].push_back(entry);
    if (options.out.empty() || !distributed::isRoot()) return;
    std::filesystem::create_directories(options.out);
    graph::writeFileAtomic(options.out + "/summary.json", run.summary.dump(2) + "\n");
  };
  writeSummary();
  if (distributed::isRoot() && !finished.empty()) {
    std::cerr << "resuming: " << finished.size() << " of " << total
              << " subgraphs already finished under " << options.out << "\n";
  }
  // Subgraphs equal up to names (a model's layers) take the search of the first of them
  // (search_reuse.h), run once on each rank that needs it.
  std::vector<const graph::Program*> searchAs(total, nullptr);
  std::map<std::string, size_t> firstOfKind;
  for (size_t i = 0; i < total; ++i) {
    const std::string key = reuseKey(model.subgraphs[i].program);
    if (key.empty()) continue;
    const auto [first, inserted] = firstOfKind.emplace(key, i);
    if (!inserted) searchAs[i] = &model.subgraphs[first->second].program;
  }
  SearchReuse reuse;
  distributed::WorkItems work;
  work.items = subgraphsToSearch(total, finished);
  work.run = [&](int item) {
    return std::any(runSubgraph(model.subgraphs[item], ranked, gpu.get(), reuse, searchAs[item]));
  };
  work.encode = [](const std::any& r) {
    return encodeOutcome(std::any_cast<const SubgraphOutcome&>(r));
  };
  work.decode = [](const std::string& bytes) { return std::any(decodeOutcome(bytes)); };
  work.collect = [&](int item, std::any&& result, double seconds) {
    SubgraphOutcome outcome = std::any_cast<SubgraphOutcome&&>(std::move(result));
    const std::string& name = model.subgraphs[item].name;
    if (!options.out.empty()) installFolder(options.out, name, outcome.files);
    finished[item] = std::move(outcome.entry);
    writeSummary();
    std::cerr << "[" << finished.size() << "/" << total << "] "
              << finishedLine(finished[item], seconds) << "\n";
  };
  const auto start = std::chrono::steady_clock::now();
  const std::vector<distributed::RankShare> shares = distributed::runItems(work, spread);
  // Every rank ends with rank 0's summary, so every rank's exit code is rank 0's.
  if (distributed::isRoot()) {
    run.summary["spread"] = distributed::spreadName(spread);
    run.summary["seconds"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.summary["ranks"] = ranksJson(shares, finished);
  }
  writeSummary();
  run.summary = nlohmann::json::parse(distributed::broadcast(run.summary.dump()));
  countOutcomes(run);
  return run;
}

}  // namespace mugraph::driver
