// `mugraph superoptimize model.onnx`: imports the model (onnx_import/), searches every
// subgraph as a program of its own, and writes DIR/<subgraph>/ exactly as a program's search
// does, plus DIR/summary.json: the subgraphs with their ONNX nodes, program, verified count
// and best variant, and every node left to the framework with its reason.
#include <chrono>
#include <filesystem>
#include <iostream>

#include "graph/error.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "graph/program_text.h"
#include "onnx_import/import_model.h"
#include "tools/commands.h"
#include "tools/superoptimize_support.h"

namespace mugraph::tools {
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

nlohmann::json boundJson(const onnx_import::Subgraph& s) {
  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
  for (const onnx_import::BoundInput& in : s.inputs) {
    nlohmann::json entry = {{"name", in.irName}, {"onnx_value", in.value}};
    if (in.buffer != in.value) entry["reads_buffer_of"] = in.buffer;
    if (in.transposed) entry["layout"] = "transposed";
    inputs.push_back(entry);
  }
  for (const onnx_import::BoundOutput& out : s.outputs) {
    outputs.push_back({{"name", out.irName}, {"onnx_value", out.value}});
  }
  return {{"inputs", inputs}, {"outputs", outputs}};
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
  return best;
}

}  // namespace

int superoptimizeModel(const SuperoptimizeOptions& o) {
  if (!o.checkpoint.empty() || o.resume) {
    throw UserError("--checkpoint", "applies to one program, not to a model's subgraphs");
  }
  const std::unique_ptr<runtime::CudaDriver> driver = driverForProfile(o.profile);
  const onnx_import::ImportedModel model = onnx_import::importModel(o.program, dimPins(o.dims));
  nlohmann::json subgraphs = nlohmann::json::array();
  int failures = 0;
  const size_t total = model.subgraphs.size();
  for (size_t i = 0; i < total; ++i) {
    const onnx_import::Subgraph& s = model.subgraphs[i];
    std::cerr << "[" << i + 1 << "/" << total << "] " << s.name << ": " << s.program.ops.size()
              << " ops, searching\n";
    nlohmann::json entry = {{"name", s.name},
                            {"nodes", s.nodes},
                            {"ops", s.ops},
                            {"program_text", graph::programToText(s.program)}};
    entry.update(boundJson(s));
    if (!s.headFold.empty()) entry["repeated_kv_heads"] = s.headFold;
    const std::string dir = o.out.empty() ? "" : o.out + "/" + s.name;
    if (!dir.empty()) {
      std::filesystem::create_directories(dir);
      graph::saveProgram(dir + "/program.mg", s.program);
      entry["program"] = s.name + "/program.mg";
    }
    try {
      search::SearchOptions options = searchOptionsFor(s.program, o);
      options.progress = false;
      search::SearchResult result = search::superoptimize(s.program, options);
      const Measurements measured =
          driver ? profileOnGpu(*driver, result, *options.config.target, dir) : Measurements{};
      if (!dir.empty()) failures += writeVariants(result, measured, *options.config.target, dir);
      entry["verified"] = result.variants.size();
      entry["best"] = bestJson(result, measured);
      entry["seconds"] = result.summary.seconds;
      entry["complete"] = result.summary.complete;
      std::cerr << "[" << i + 1 << "/" << total << "] " << s.name << ": " << result.variants.size()
                << " verified"
                << (result.variants.empty() ? ""
                                            : ", best " + result.variants.front().name + " (" +
                                                  result.variants.front().verification.level + ")")
                << ", " << static_cast<int>(result.summary.seconds + 0.5) << " s\n";
    } catch (const std::exception& e) {
      ++failures;
      entry["verified"] = 0;
      entry["best"] = nullptr;
      entry["error"] = e.what();
      std::cerr << "mugraph: internal error: subgraph " << s.name << ": " << e.what() << "\n";
    }
    subgraphs.push_back(entry);
  }
  nlohmann::json unsupported = nlohmann::json::array();
  for (const onnx_import::LeftOut& left : model.unsupported) {
    unsupported.push_back({{"node", left.node}, {"op", left.op}, {"reason", left.reason}});
  }
  const nlohmann::json summary = {{"model", model.path},
                                  {"opset", model.opset},
                                  {"subgraphs", subgraphs},
                                  {"unsupported", unsupported}};
  if (!o.out.empty()) {
    std::filesystem::create_directories(o.out);
    graph::writeFileAtomic(o.out + "/summary.json", summary.dump(2) + "\n");
  }
  if (o.json) {
    std::cout << summary.dump() << "\n";
  } else {
    std::cout << total << " subgraph(s), " << model.unsupported.size()
              << " node(s) left to the framework\n";
    for (const nlohmann::json& s : subgraphs) {
      std::cout << "  " << s["name"].get<std::string>() << ": " << s["ops"].size() << " nodes, "
                << s["verified"] << " verified"
                << (s["best"].is_null() ? "" : ", best " + s["best"]["name"].get<std::string>())
                << "\n";
    }
    for (const onnx_import::LeftOut& left : model.unsupported) {
      std::cout << "  left out: " << left.node << " (" << left.op << "): " << left.reason << "\n";
    }
  }
  return failures == 0 ? kExitOk : kExitInternalError;
}

}  // namespace mugraph::tools
