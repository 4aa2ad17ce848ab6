// What the ranks of a distributed search (distributed/work_queue.h) send rank 0: a subtree's
// outcome and a candidate's verdict, each as a partial checkpoint (checkpoint.h), whose number
// and hash formats round-trip exactly. Rank 0's own results never take this path.
#pragma once

#include <any>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "search/checkpoint.h"
#include "search/enumerate_kernel_graphs.h"

namespace mugraph::search {

// A SubtreeOutcome in a std::any, to bytes and back (its `origin` is the item it was dealt as;
// `explored` stays on the rank that explored it).
std::string encodeOutcome(const std::any& outcome);
std::any decodeOutcome(const std::string& bytes);

// A candidate's verification: its hash and record, or nothing for a candidate whose plan does
// not fit the target (never verified, never reported).
using Verdict = std::optional<std::pair<uint64_t, VerificationRecord>>;
std::string encodeVerdict(const std::any& verdict);
std::any decodeVerdict(const std::string& bytes);

}  // namespace mugraph::search
