#include "onnx_import/partition_json.h"

#include "graph/hash.h"
#include "graph/program_text.h"

namespace mugraph::onnx_import {

nlohmann::json subgraphJson(const Subgraph& s) {
  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
  for (const BoundInput& in : s.inputs) {
    nlohmann::json entry = {{"name", in.irName}, {"onnx_value", in.value}};
    if (in.buffer != in.value) entry["reads_buffer_of"] = in.buffer;
    if (in.transposed) entry["layout"] = "transposed";
    inputs.push_back(entry);
  }
  for (const BoundOutput& out : s.outputs) {
    outputs.push_back({{"name", out.irName}, {"onnx_value", out.value}});
  }
  nlohmann::json entry = {{"name", s.name},
                          {"nodes", s.nodes},
                          {"ops", s.ops},
                          {"program_text", graph::programToText(s.program)},
                          {"program_hash", graph::hashHex(graph::programHash(s.program))},
                          {"inputs", inputs},
                          {"outputs", outputs}};
  if (!s.headFold.empty()) entry["repeated_kv_heads"] = s.headFold;
  return entry;
}

nlohmann::json leftOutJson(const ImportedModel& model) {
  nlohmann::json unsupported = nlohmann::json::array();
  for (const LeftOut& left : model.unsupported) {
    unsupported.push_back({{"node", left.node}, {"op", left.op}, {"reason", left.reason}});
  }
  return unsupported;
}

}  // namespace mugraph::onnx_import
