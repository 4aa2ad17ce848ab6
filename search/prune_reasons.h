// Why the search dropped a partial or finished candidate. Counted per reason, reported in the
// progress line, the summary and the JSON output, and saved in checkpoints.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace mugraph::search {

enum class PruneReason {
  Shape,               // a split leaves a part empty, or shape inference / validation failed
  SharedMemory,        // the block graph's plan does not fit the target (shared memory, grid, or a
                       // warpgroup-only thread count or a warpgroup sketch off that path)
  AbstractExpression,  // a tile's term is not a subexpression of the program (Z3 oracle)
  LoopPhase,           // per-iteration and accumulated tiles meet, or an output is per-iteration
  Replication,         // an output does not carry a grid axis (two blocks would write it)
  KernelLimit,         // the candidate already has the most kernels the config allows
  Duplicate,           // same canonical schedule hash as a candidate found before
  Dominated,           // a sibling computes the same segment with the same future, cheaper
                       // (enumerate_kernel_graphs.h: only the cheapest few are explored)
  LengthDependent,     // a predefined op of a dynamic program reads a dynamic dim: its default
                       // block graph's tiles would follow the length (dynamic_choices.h); or
                       // a block graph's kernel cannot take the lengths (plan/kernel_plan.h)
  SquaredRange,        // a kernel stores, as a 16-bit intermediate, a value of squared range
                       // (graph/value_ranges.h): it would overflow where the program does not
  Count
};

inline constexpr int kPruneReasons = static_cast<int>(PruneReason::Count);

const char* pruneReasonName(PruneReason reason);  // "shape", "shared_memory", ...

using PruneCounts = std::array<uint64_t, kPruneReasons>;

std::map<std::string, uint64_t> pruneCountsByName(const PruneCounts& counts);

}  // namespace mugraph::search
