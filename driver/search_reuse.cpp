#include "driver/search_reuse.h"

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
  for (graph::TensorDesc& tensor : renamed.schedule.graph.tensors) {
    // A tensor the search made is named after the program tensor it derives from
    // ("h_part": h's split-K partial sums): the longest such name is replaced too.
    auto match = names.end();
    for (auto it = names.begin(); it != names.end(); ++it) {
      const std::string& name = it->first;
      const bool derived = tensor.name == name || (tensor.name.size() > name.size() &&
                                                   tensor.name.compare(0, name.size(), name) == 0 &&
                                                   tensor.name[name.size()] == '_');
      if (derived && (match == names.end() || name.size() > match->first.size())) match = it;
    }
    if (match != names.end()) {
      tensor.name = match->second + tensor.name.substr(match->first.size());
    }
  }
  return search::asVariantOf(to, std::move(renamed));
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
