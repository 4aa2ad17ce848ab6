// What a search has finished, saved so that `--resume` continues where it stopped and ends
// with the same result set as an uninterrupted run: the completed top-level subtrees (by their
// ordinal in the deterministic subtree list), their counters, every candidate hash, the best
// candidates kept so far, and the verdicts of candidates already verified. Written atomically.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "search/enumerate_kernel_graphs.h"
#include "search/prune_reasons.h"

namespace mugraph::search {

struct VerificationRecord {
  bool equivalent = false;
  std::string level;  // "finite-field" or "float-only"
  double falseAcceptBound = 1.0;
  int trials = 0;
  double maxRelError = 0;
  std::string detail;  // mismatch or why float-only
  std::string scaledTwin;  // the map dims shrunk for the check (verify/scaled_twin.h), or ""
};

struct CheckpointState {
  uint64_t programHash = 0;
  std::string configKey;  // the search space; a resume must use the same one
  int subtrees = 0;
  std::set<int> completed;
  ExploreStats stats;
  std::set<uint64_t> hashes;
  std::vector<Candidate> pool;  // best first
  std::map<uint64_t, VerificationRecord> verified;
};

void saveCheckpoint(const std::string& path, const CheckpointState& state);
// UserError if the file is unreadable, malformed, or of another format or version.
CheckpointState loadCheckpoint(const std::string& path);

// The checkpoint as the text saveCheckpoint writes, and back (UserError naming `where`). Ranks
// send each other a subtree's outcome and verdicts as such partial checkpoints, whose number
// and hash formats round-trip exactly.
std::string checkpointText(const CheckpointState& state);
CheckpointState parseCheckpoint(const std::string& text, const std::string& where);

}  // namespace mugraph::search
