#include "search/rank_messages.h"

namespace mugraph::search {

std::string encodeOutcome(const std::any& result) {
  const auto& outcome = std::any_cast<const SubtreeOutcome&>(result);
  CheckpointState part;
  if (outcome.completed) part.completed.insert(outcome.origin);
  part.stats = outcome.stats;
  part.hashes = outcome.hashes;
  part.pool = outcome.best;
  return checkpointText(part);
}

std::any decodeOutcome(const std::string& bytes) {
  CheckpointState part = parseCheckpoint(bytes, "a rank's subtree outcome");
  SubtreeOutcome outcome;
  outcome.completed = !part.completed.empty();
  if (outcome.completed) outcome.origin = *part.completed.begin();
  outcome.stats = part.stats;
  outcome.hashes = std::move(part.hashes);
  outcome.best = std::move(part.pool);
  return outcome;
}

std::string encodeVerdict(const std::any& result) {
  const auto& verdict = std::any_cast<const Verdict&>(result);
  if (!verdict) return "";
  CheckpointState part;
  part.verified[verdict->first] = verdict->second;
  return checkpointText(part);
}

std::any decodeVerdict(const std::string& bytes) {
  if (bytes.empty()) return Verdict();
  const CheckpointState part = parseCheckpoint(bytes, "a rank's verdict");
  return Verdict(*part.verified.begin());
}

}  // namespace mugraph::search
