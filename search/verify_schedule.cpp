// Verifying one candidate schedule against its program (see superoptimize.h).
#include "search/superoptimize.h"

#include "graph/dynamic_dims.h"
#include "graph/error.h"
#include "verify/equivalence.h"

namespace mugraph::search {

VerificationRecord verifySchedule(const graph::Program& program, const graph::KernelGraph& graph,
                                  uint64_t seed,
                                  const std::shared_ptr<verify::ReferenceEvaluations>& cache) {
  verify::EquivalenceOptions options;
  options.seed = seed;
  options.referenceCache = cache;
  options.targetBound = 1e-12;
  VerificationRecord record;
  try {
    // A dynamic program's candidate is checked here at the reference length (every dim at its
    // max), as the static pair graph::instantiate gives, which the scaled twins take (the
    // range check covers the other lengths, driver/range_ranking.h).
    const verify::EquivalenceReport report =
        graph.dims.empty() ? verify::checkEquivalence(program, graph, options)
                           : verify::checkEquivalence(
                                 graph::instantiate(program, graph::referenceValues(program)),
                                 graph::instantiate(graph, graph::referenceValues(graph)), options);
    record.equivalent = report.equivalent;
    record.level = verify::levelName(report.level);
    record.falseAcceptBound = report.falseAcceptBound;
    record.trials = report.trials;
    record.maxRelError = report.maxRelError;
    record.detail = report.equivalent ? report.levelReason : report.mismatch;
    record.scaledTwin = report.scaledTwin;
  } catch (const UserError& e) {
    record.equivalent = false;
    record.detail = e.what();
  }
  return record;
}

bool acceptable(const VerificationRecord& record) {
  // Every float test and fingerprint trial agreed. The bound is the variant's own, stated with
  // it: trials aim at 1e-12, and where they cannot reach it (a random function over millions of
  // values, verify/README.md) the variant is kept with the bound they reached, never hidden.
  return record.equivalent;
}

}  // namespace mugraph::search
