// Every shipped schedule (schedules/*.json) and every variant found for the built-in programs
// (schedules/found/*.json) checks against its program at level finite-field with a
// false-accept bound of at most 1e-12: every op they use has a field meaning, rms_norm's root
// included. One float test scale, then fingerprints; on scaled twins where map dims shrink
// (verify/scaled_twin.h), and where the real shapes are small enough, at them too, with the
// same verdict.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "graph/files.h"
#include "verify/equivalence.h"
#include "verify/scaled_twin.h"
#include "verify/test_support.h"

namespace mugraph::verify {
namespace {

// Above this many multiply-adds a check takes from half a minute (gemm_1024, the small-batch
// projections, 64K decode) to a quarter of an hour (gemm_4096: 2^36) on two cores; such
// checks run only when MUGRAPH_CHECK_LARGE_SCHEDULES is set, which keeps the default suite
// within CI's time. The work counted is the twin's where the check runs on one.
constexpr double kMaxWork = 5e8;
// A twin's check does a few times less work per multiply-add (the interpreter's kernels run on
// smaller tensors, and most of the check's other costs shrink with the twin).
constexpr double kMaxTwinWork = 3e9;
// A schedule checked on its twin is checked at its real shapes too, for the same verdict, up to
// this much work: enough schedules of every kind to hold the twin to the real shapes, within
// CI's time (the decodes and small-batch projections above it take 5-10 s each).
constexpr double kMaxRealShapeWork = 5e7;

bool checkLargeSchedules() {
  return std::getenv("MUGRAPH_CHECK_LARGE_SCHEDULES") != nullptr;
}

TEST(ShippedSchedules, EveryScheduleAndFoundVariantChecksInTheFieldWithinTheBound) {
  const std::filesystem::path root = std::filesystem::path(MUGRAPH_SOURCE_DIR) / "schedules";
  EquivalenceOptions options;
  options.seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(options.seed));
  options.floatScales = {0.5};
  options.floatLogitSpreads.clear();
  int checked = 0, found = 0, onTwins = 0, atRealShapesToo = 0;
  for (const std::filesystem::path& folder : {root, root / "found"}) {
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
      if (entry.path().extension() != ".json") continue;
      SCOPED_TRACE(entry.path().string());
      const graph::Schedule s = graph::loadSchedule(entry.path().string());
      const std::optional<ScaledTwin> twin = scaledTwin(s.program, s.graph);
      const double work = matmulWork(s.program);
      if ((twin ? work / twin->workRatio > kMaxTwinWork : work > kMaxWork) &&
          !checkLargeSchedules()) {
        std::cout << "[shipped schedules] " << entry.path().filename().string()
                  << ": skipped, set MUGRAPH_CHECK_LARGE_SCHEDULES to check it\n";
        continue;
      }
      const EquivalenceReport report = checkEquivalence(s.program, s.graph, options);
      EXPECT_EQ(report.scaledTwin, twin ? twin->describe() : "");
      if (twin && (work <= kMaxRealShapeWork || checkLargeSchedules())) {
        EquivalenceOptions realShapes = options;
        realShapes.scaledTwin = false;
        const EquivalenceReport real = checkEquivalence(s.program, s.graph, realShapes);
        EXPECT_TRUE(real.equivalent) << real.mismatch;
        EXPECT_EQ(real.degree, report.degree);
        ++atRealShapesToo;
      }
      onTwins += !report.scaledTwin.empty();
      EXPECT_TRUE(report.equivalent) << report.mismatch;
      EXPECT_EQ(report.level, VerificationLevel::FiniteField) << report.levelReason;
      EXPECT_LE(report.falseAcceptBound, 1e-12);
      std::cout << "[shipped schedules] " << entry.path().filename().string() << ": "
                << levelName(report.level) << ", degree " << report.degree << ", " << report.trials
                << " trials, bound " << report.falseAcceptBound
                << (report.scaledTwin.empty() ? "" : ", scaled twin: " + report.scaledTwin) << "\n";
      ++checked;
      found += folder != root;
    }
  }
  EXPECT_GE(checked, 10);
  EXPECT_GE(found, 5);
  EXPECT_GE(onTwins, 10);
  EXPECT_GE(atRealShapesToo, 3);
  std::cout << "[shipped schedules] " << checked << " checked, " << onTwins << " on scaled twins, "
            << atRealShapesToo << " of those at their real shapes too\n";
}

}  // namespace
}  // namespace mugraph::verify
