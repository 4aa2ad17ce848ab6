#include "onnx_import/partition_json.h"

#include "graph/hash.h"
#include "graph/program_text.h"

namespace mugraph::onnx_import {

graph::Program canonicalNames(const graph::Program& program) {
  graph::Program canonical = program;
  canonical.name = "subgraph";
  for (size_t d = 0; d < canonical.dims.size(); ++d) {
    canonical.dims[d].name = "n" + std::to_string(d);
  }
  std::vector<std::string> names(canonical.tensors.size());
  for (size_t i = 0; i < canonical.inputs.size(); ++i) {
    names[canonical.inputs[i]] = "x" + std::to_string(i);
  }
  for (size_t i = 0; i < canonical.outputs.size(); ++i) {
    names[canonical.outputs[i]] = "y" + std::to_string(i);
  }
  int next = 0;
  for (size_t t = 0; t < names.size(); ++t) {
    if (names[t].empty()) names[t] = "t" + std::to_string(next++);
    canonical.tensors[t].name = names[t];
  }
  return canonical;
}


nlohmann::json subgraphJson(const Subgraph& s) {
  const graph::Program canonical = canonicalNames(s.program);
  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
  for (const BoundInput& in : s.inputs) {
    nlohmann::json entry = {{"name", in.irName}, {"onnx_value", in.value}};
    if (in.buffer != in.value) entry["reads_buffer_of"] = in.buffer;
    if (in.layout != graph::Layout::RowMajor) {
      entry["layout"] = std::string(graph::layoutName(in.layout));
    }
    if (in.bufferLayout != graph::Layout::RowMajor) {
      entry["buffer_layout"] = std::string(graph::layoutName(in.bufferLayout));
    }
    if (in.tiling.times != 1) {
      entry["tiled"] = {{"dim_from_end", in.tiling.dimFromEnd}, {"times", in.tiling.times}};
    }
    if (in.castFrom) entry["cast_from"] = std::string(graph::dtypeName(*in.castFrom));
    inputs.push_back(entry);
  }
  for (const BoundOutput& out : s.outputs) {
    nlohmann::json entry = {{"name", out.irName}, {"onnx_value", out.value}};
    if (out.layout != graph::Layout::RowMajor) {
      entry["layout"] = std::string(graph::layoutName(out.layout));
    }
    outputs.push_back(entry);
  }
  nlohmann::json entry = {{"name", s.name},
                          {"nodes", s.nodes},
                          {"ops", s.ops},
                          {"program_text", graph::programToText(s.program)},
                          {"program_hash", graph::hashHex(graph::programHash(s.program))},
                          {"canonical_program_text", graph::programToText(canonical)},
                          {"canonical_hash", graph::hashHex(graph::programHash(canonical))},
                          {"inputs", inputs},
                          {"outputs", outputs}};
  if (!s.headFold.empty()) entry["repeated_kv_heads"] = s.headFold;
  if (!s.causalMasks.empty()) {
    nlohmann::json masks = nlohmann::json::array();
    for (const CausalMaskRead& m : s.causalMasks) {
      masks.push_back({{"node", m.node}, {"mask", m.mask}, {"queries", m.queries}});
    }
    entry["causal_masks"] = masks;
  }
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
