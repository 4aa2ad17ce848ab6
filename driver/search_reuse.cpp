#include "driver/search_reuse.h"

#include "graph/hash.h"
#include "graph/program_text.h"
#include "graph/validate.h"
#include "onnx_import/partition_json.h"

namespace mugraph::driver {

std::string reuseKey(const graph::Program& program) {
  if (!program.dims.empty()) return "";
  return graph::programToText(onnx_import::canonicalNames(program));
}

const search::SearchResult* SearchReuse::find(const graph::Program& program) const {
  const std::string key = reuseKey(program);
  if (key.empty()) return nullptr;
  const auto found = entries_.find(key);
  if (found == entries_.end() || !(found->second.first == program)) return nullptr;
  return &found->second.second;
}

void SearchReuse::add(const graph::Program& program, const search::SearchResult& result) {
  const std::string key = reuseKey(program);
  if (!key.empty()) entries_.insert_or_assign(key, std::make_pair(program, result));
}

search::VerifiedVariant renamedVariant(const search::VerifiedVariant& variant,
                                       const graph::Program& from, const graph::Program& to) {
  std::map<std::string, std::string> names;
  for (size_t t = 0; t < from.tensors.size(); ++t) names[from.tensors[t].name] = to.tensors[t].name;
  search::VerifiedVariant renamed = variant;
  graph::Schedule& schedule = renamed.schedule;
  schedule.program = to;
  for (graph::TensorDesc& tensor : schedule.graph.tensors) {
    const auto found = names.find(tensor.name);
    if (found != names.end()) tensor.name = found->second;
  }
  // Named as the search names a variant of a program (search/superoptimize.cpp).
  schedule.name = to.name;
  schedule.name += ".v" + graph::hashHex(graph::scheduleHash(schedule));
  schedule.graph.name = schedule.name;
  renamed.hash = graph::scheduleHash(schedule);
  renamed.name = graph::variantName(schedule);
  return renamed;
}

std::optional<search::SearchResult> renamedResult(const search::SearchResult& result,
                                                  const graph::Program& from,
                                                  const graph::Program& to) {
  search::SearchResult renamed = result;
  for (search::VerifiedVariant& v : renamed.variants) {
    v = renamedVariant(v, from, to);
    try {
      graph::validateSchedule(v.schedule);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  search::rankVariantsByCost(renamed.variants);
  return renamed;
}

}  // namespace mugraph::driver
