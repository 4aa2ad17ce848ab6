#include "search/checkpoint.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "graph/error.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "graph/json_format.h"

namespace mugraph::search {
namespace {

constexpr const char* kCheckpointFormat = "mugraph.search_checkpoint";
constexpr int kCheckpointVersion = 2;  // 2: pool entries record grid_splits

uint64_t parseHash(const std::string& text, const std::string& where) {
  try {
    size_t used = 0;
    const uint64_t value = std::stoull(text, &used, 16);
    if (used == text.size() && text.size() == 16) return value;
  } catch (const std::exception&) {
  }
  throw UserError(where, "'" + text + "' is not a 16-digit hex hash");
}

// JSON has no infinity or NaN (nlohmann writes null), yet a rejected candidate's float error
// is infinite where it overflowed: such numbers are written as "inf", "-inf" or "nan".
nlohmann::json numberJson(double value) {
  if (std::isfinite(value)) return value;
  return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
}

double numberFrom(const nlohmann::json& json) {
  if (json.is_string()) {
    const std::string text = json.get<std::string>();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
    if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  return json.get<double>();  // a type error names anything else
}

}  // namespace

std::string checkpointText(const CheckpointState& state) {
  nlohmann::json pool = nlohmann::json::array();
  for (const Candidate& c : state.pool) {
    nlohmann::json lengthCosts = nlohmann::json::array();
    for (double cost : c.lengthCosts) lengthCosts.push_back(numberJson(cost));
    pool.push_back({{"hash", graph::hashHex(c.hash)},
                    {"cost", numberJson(c.cost)},
                    {"length_costs", lengthCosts},
                    {"origin", c.origin},
                    {"grid_splits", c.gridSplits},
                    {"schedule", graph::scheduleToJson(c.schedule)}});
  }
  nlohmann::json verified = nlohmann::json::array();
  for (const auto& [hash, r] : state.verified) {
    verified.push_back({{"hash", graph::hashHex(hash)},
                        {"equivalent", r.equivalent},
                        {"level", r.level},
                        {"false_accept_bound", numberJson(r.falseAcceptBound)},
                        {"trials", r.trials},
                        {"max_rel_error", numberJson(r.maxRelError)},
                        {"detail", r.detail},
                        {"scaled_twin", r.scaledTwin}});
  }
  nlohmann::json hashes = nlohmann::json::array();
  for (uint64_t h : state.hashes) hashes.push_back(graph::hashHex(h));
  nlohmann::json pruned = nlohmann::json::object();
  for (const auto& [name, count] : pruneCountsByName(state.stats.pruned)) pruned[name] = count;
  const nlohmann::json json = {{"format", kCheckpointFormat},
                               {"version", kCheckpointVersion},
                               {"program_hash", graph::hashHex(state.programHash)},
                               {"config", state.configKey},
                               {"subtrees", state.subtrees},
                               {"completed", state.completed},
                               {"states", state.stats.states},
                               {"pruned", pruned},
                               {"hashes", hashes},
                               {"pool", pool},
                               {"verified", verified}};
  return json.dump() + "\n";
}

void saveCheckpoint(const std::string& path, const CheckpointState& state) {
  graph::writeFileAtomic(path, checkpointText(state));
}

CheckpointState loadCheckpoint(const std::string& path) {
  return parseCheckpoint(graph::readFileText(path), path);
}

CheckpointState parseCheckpoint(const std::string& text, const std::string& path) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path, std::string("not JSON: ") + e.what());
  }
  try {
    if (json.value("format", "") != kCheckpointFormat) {
      throw UserError(path, "not a search checkpoint (format is not mugraph.search_checkpoint)");
    }
    if (json.at("version").get<int>() != kCheckpointVersion) {
      throw UserError(path, "checkpoint version " + json.at("version").dump() +
                                " cannot be read (this build reads version 1)");
    }
    CheckpointState state;
    state.programHash = parseHash(json.at("program_hash").get<std::string>(), path);
    state.configKey = json.at("config").get<std::string>();
    state.subtrees = json.at("subtrees").get<int>();
    state.completed = json.at("completed").get<std::set<int>>();
    state.stats.states = json.at("states").get<uint64_t>();
    for (int r = 0; r < kPruneReasons; ++r) {
      const char* name = pruneReasonName(static_cast<PruneReason>(r));
      state.stats.pruned[r] = json.at("pruned").value(name, uint64_t{0});
    }
    for (const nlohmann::json& h : json.at("hashes")) {
      state.hashes.insert(parseHash(h.get<std::string>(), path));
    }
    for (const nlohmann::json& entry : json.at("pool")) {
      Candidate c;
      c.hash = parseHash(entry.at("hash").get<std::string>(), path);
      c.cost = numberFrom(entry.at("cost"));
      if (entry.contains("length_costs")) {  // not in checkpoints of older builds
        for (const nlohmann::json& cost : entry.at("length_costs")) {
          c.lengthCosts.push_back(numberFrom(cost));
        }
      }
      c.origin = entry.at("origin").get<int>();
      c.gridSplits = entry.at("grid_splits").get<int>();
      c.schedule = graph::scheduleFromJson(entry.at("schedule"), path);
      state.pool.push_back(std::move(c));
    }
    for (const nlohmann::json& entry : json.at("verified")) {
      VerificationRecord r;
      r.equivalent = entry.at("equivalent").get<bool>();
      r.level = entry.at("level").get<std::string>();
      r.falseAcceptBound = numberFrom(entry.at("false_accept_bound"));
      r.trials = entry.at("trials").get<int>();
      r.maxRelError = numberFrom(entry.at("max_rel_error"));
      r.detail = entry.at("detail").get<std::string>();
      r.scaledTwin = entry.value("scaled_twin", "");  // not in checkpoints of older builds
      state.verified[parseHash(entry.at("hash").get<std::string>(), path)] = r;
    }
    return state;
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path, std::string("malformed checkpoint: ") + e.what());
  }
}

}  // namespace mugraph::search
