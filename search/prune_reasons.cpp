#include "search/prune_reasons.h"

namespace mugraph::search {

const char* pruneReasonName(PruneReason reason) {
  switch (reason) {
    case PruneReason::Shape:
      return "shape";
    case PruneReason::SharedMemory:
      return "shared_memory";
    case PruneReason::AbstractExpression:
      return "abstract_expression";
    case PruneReason::LoopPhase:
      return "loop_phase";
    case PruneReason::Replication:
      return "replication";
    case PruneReason::KernelLimit:
      return "kernel_limit";
    case PruneReason::Duplicate:
      return "duplicate";
    case PruneReason::Dominated:
      return "dominated";
    case PruneReason::LengthDependent:
      return "length_dependent";
    case PruneReason::SquaredRange:
      return "squared_range";
    case PruneReason::Count:
      break;
  }
  return "unknown";
}

std::map<std::string, uint64_t> pruneCountsByName(const PruneCounts& counts) {
  std::map<std::string, uint64_t> named;
  for (int r = 0; r < kPruneReasons; ++r) {
    named[pruneReasonName(static_cast<PruneReason>(r))] = counts[r];
  }
  return named;
}

}  // namespace mugraph::search
