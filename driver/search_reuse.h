// Searches a process already ran, kept for programs that compute the same function on the same
// shapes under other names. A model's layers give subgraphs equal up to tensor names
// (onnx_import::canonicalNames); each such group is searched once, as its first member, and
// every other member takes that search's variants with its own names: tensor t of one program
// is tensor t of the other, so each schedule is renamed tensor by tensor and stays verified
// (the function, the shapes and the kernels are the same). A member's variants are always
// its first member's renamed, whichever rank searched them, so the files do not depend on how
// the subgraphs were dealt out. Static programs only.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "graph/ir.h"
#include "search/superoptimize.h"

namespace mugraph::driver {

class SearchReuse {
 public:
  // The result kept for exactly `program` (names included), or nullptr.
  const search::SearchResult* find(const graph::Program& program) const;
  void add(const graph::Program& program, const search::SearchResult& result);

 private:
  std::map<std::string, std::pair<graph::Program, search::SearchResult>> entries_;
};

// The text two programs equal up to names share (onnx_import::canonicalNames); empty for a
// program with dynamic dims, which is never reused.
std::string reuseKey(const graph::Program& program);

// `variant`, a schedule of `from`, as a schedule of `to`: the program replaced, every kernel
// graph tensor named as a tensor of `from` (or after one: "<name>_...") given the name of the
// same tensor of `to`, and the schedule named and hashed anew. `to` must equal `from` up to
// names.
search::VerifiedVariant renamedVariant(const search::VerifiedVariant& variant,
                                       const graph::Program& from, const graph::Program& to);

// Every variant of `result` renamed so, ranked again (by cost, then hash); nothing where a
// renamed schedule does not validate (a name the search made equals one of `to`'s).
std::optional<search::SearchResult> renamedResult(const search::SearchResult& result,
                                                  const graph::Program& from,
                                                  const graph::Program& to);

}  // namespace mugraph::driver
