// runModel (driver/superoptimize.h): imports the model (onnx_import/), searches every subgraph
// as a program of its own, and writes out/<subgraph>/ exactly as a program's run does, plus
// out/summary.json: the subgraphs with their ONNX nodes, program, verified count and best
// variant (or why there is none), and every node left to the framework with its reason. The
// summary is rewritten after each subgraph, so "subgraphs" holds those that finished of
// "subgraphs_total".
#include <filesystem>
#include <iostream>

#include "distributed/ranks.h"
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

// One subgraph's entry of the model summary, its search and its files.
nlohmann::json runSubgraph(const onnx_import::Subgraph& s, const std::string& label,
                           const RunOptions& options, const runtime::CudaDriver* gpu,
                           ModelRun& model) {
  std::cerr << label << s.name << ": " << s.program.ops.size() << " ops, searching\n";
  nlohmann::json entry = onnx_import::subgraphJson(s);
  RunOptions subgraph = options;
  subgraph.out = options.out.empty() ? "" : options.out + "/" + s.name;
  subgraph.progress = false;
  if (!subgraph.out.empty()) {
    std::filesystem::create_directories(subgraph.out);
    graph::saveProgram(subgraph.out + "/program.mg", s.program);
    entry["program"] = s.name + "/program.mg";
  }
  try {
    const ProgramRun run = superoptimizeProgram(s.program, subgraph, gpu);
    model.internalErrors += run.withoutCode;
    const std::vector<search::VerifiedVariant>& variants = run.result.variants;
    entry["verified"] = variants.size();
    entry["best"] = bestJson(run.result, run.ranking.measured);
    entry["seconds"] = run.result.summary.seconds;
    entry["complete"] = run.result.summary.complete;
    if (!run.noVariants.empty()) {
      entry["no_variants"] = run.noVariants;
      ++model.subgraphsWithoutVariants;
    }
    if (distributed::isRoot()) {
      std::cerr << label << s.name << ": " << variants.size() << " verified"
                << (variants.empty() ? " (" + run.noVariants + ")"
                                     : ", best " + variants.front().name + " (" +
                                           variants.front().verification.level + ")")
                << ", " << static_cast<int>(run.result.summary.seconds + 0.5) << " s\n";
    }
  } catch (const UserError& e) {
    // A dynamic subgraph no length-independent schedule covers: the subgraph has no variant.
    entry["verified"] = 0;
    entry["best"] = nullptr;
    entry["no_variants"] = graph::escapeForDisplay(e.what());
    ++model.subgraphsWithoutVariants;
    std::cerr << label << s.name << ": 0 verified (" << graph::escapeForDisplay(e.what()) << ")\n";
  } catch (const std::exception& e) {
    ++model.internalErrors;
    entry["verified"] = 0;
    entry["best"] = nullptr;
    entry["error"] = graph::escapeForDisplay(e.what());  // valid UTF-8 in summary.json
    std::cerr << "mugraph: internal error: subgraph " << s.name << ": "
              << graph::escapeForDisplay(e.what()) << "\n";
  }
  return entry;
}

}  // namespace

ModelRun runModel(const RunOptions& callerOptions) {
  const RunOptions options = onThisRank(callerOptions);
  if (!options.checkpoint.empty() || options.resume) {
    throw UserError("--checkpoint", "applies to one program, not to a model's subgraphs");
  }
  const std::unique_ptr<runtime::CudaDriver> gpu = openGpuForProfile(options.profile);
  const onnx_import::ImportedModel model = onnx_import::importModel(
      options.program, dimPins(options.dims), dimRanges(options.dimRanges));
  ModelRun run;
  const nlohmann::json unsupported = onnx_import::leftOutJson(model);
  const size_t total = model.subgraphs.size();
  run.summary = {{"model", model.path},
                 {"opset", model.opset},
                 {"subgraphs_total", total},
                 {"subgraphs", nlohmann::json::array()},
                 {"unsupported", unsupported}};
  // Written before the first search and again after each subgraph, so a run that stops
  // part way leaves the summary of every subgraph it finished.
  const auto writeSummary = [&] {
    if (options.out.empty()) return;
    std::filesystem::create_directories(options.out);
    graph::writeFileAtomic(options.out + "/summary.json", run.summary.dump(2) + "\n");
  };
  writeSummary();
  for (size_t i = 0; i < total; ++i) {
    const std::string label = "[" + std::to_string(i + 1) + "/" + std::to_string(total) + "] ";
    run.summary["subgraphs"].push_back(
        runSubgraph(model.subgraphs[i], label, options, gpu.get(), run));
    writeSummary();
  }
  return run;
}

}  // namespace mugraph::driver
