// What ranks send rank 0 round-trips exactly: a subtree's outcome (counters, hashes, the
// candidates with their schedules and costs) and a verdict, including "not emittable".
#include <gtest/gtest.h>

#include "graph/files.h"
#include "graph/hash.h"
#include "search/rank_messages.h"

namespace mugraph::search {
namespace {

TEST(RankMessages, SubtreeOutcomeRoundTrips) {
  Candidate candidate;
  candidate.schedule =
      graph::loadSchedule(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/gemm_1024.warpgroups.json");
  candidate.hash = graph::scheduleHash(candidate.schedule);
  candidate.cost = 1.0 / 3.0;  // not exact in decimal: must round-trip all the same
  candidate.origin = 7;
  candidate.gridSplits = 1;
  SubtreeOutcome outcome;
  outcome.origin = 7;
  outcome.completed = true;
  outcome.stats.states = 12;
  outcome.stats.pruned[0] = 5;
  outcome.hashes = {1, 2, 0xffffffffffffffffULL};
  outcome.best = {candidate};

  const auto back = std::any_cast<SubtreeOutcome>(decodeOutcome(encodeOutcome(outcome)));
  EXPECT_EQ(back.origin, 7);
  EXPECT_TRUE(back.completed);
  EXPECT_EQ(back.stats.states, 12u);
  EXPECT_EQ(back.stats.pruned, outcome.stats.pruned);
  EXPECT_EQ(back.hashes, outcome.hashes);
  ASSERT_EQ(back.best.size(), 1u);
  EXPECT_EQ(back.best[0].hash, candidate.hash);
  EXPECT_EQ(back.best[0].cost, candidate.cost);
  EXPECT_EQ(back.best[0].gridSplits, 1);
  EXPECT_EQ(graph::scheduleHash(back.best[0].schedule), candidate.hash);

  outcome.completed = false;
  EXPECT_FALSE(std::any_cast<SubtreeOutcome>(decodeOutcome(encodeOutcome(outcome))).completed);
}

TEST(RankMessages, VerdictRoundTripsAndNotEmittableStaysEmpty) {
  VerificationRecord record;
  record.equivalent = true;
  record.level = "finite-field";
  record.falseAcceptBound = 2.5e-19;
  record.trials = 3;
  record.maxRelError = 1e-3 / 7;
  record.detail = "why";
  record.scaledTwin = "dim 0 of 'A' 4096 -> 256 (parts of 128)";
  const auto back = std::any_cast<Verdict>(decodeVerdict(encodeVerdict(Verdict({42, record}))));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->first, 42u);
  EXPECT_EQ(back->second.falseAcceptBound, record.falseAcceptBound);
  EXPECT_EQ(back->second.maxRelError, record.maxRelError);
  EXPECT_EQ(back->second.level, "finite-field");
  EXPECT_EQ(back->second.scaledTwin, record.scaledTwin);
  EXPECT_FALSE(std::any_cast<Verdict>(decodeVerdict(encodeVerdict(Verdict()))).has_value());
}

}  // namespace
}  // namespace mugraph::search
