// --profile: every verified variant is generated, checked against the interpreter and timed
// on the GPU, then the verified set is re-ranked by measured time. A variant whose GPU result
// does not match the interpreter is dropped from the verified set: the finite-field proof
// covers the real-number function, and a kernel that overflows or loses precision where that
// function is finite is no variant a user can take.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "plan/target.h"
#include "runtime/cuda_driver.h"
#include "search/superoptimize.h"

namespace mugraph::driver {

// Under a search's out folder: the folders of the variants --profile dropped.
inline constexpr const char* kDroppedOnGpuFolder = "dropped_on_gpu";

// Measured GPU time of each variant (by name) when --profile ranked them; infinite for a
// variant that could not be profiled (no code, a failed launch).
using Measurements = std::map<std::string, double>;

// What the GPU said about one variant.
struct GpuOutcome {
  std::string variant;
  std::optional<double> microseconds;  // set when it ran and matched
  bool mismatch = false;               // ran, and does not match the interpreter
  double maxRelError = 0;              // with mismatch, over the finite elements
  int64_t nanElements = 0;             // with mismatch: NaN (computed, or never written)
  std::string notProfiled;             // why it did not run (generation or launch failed)
  uint64_t seed = 0;                   // the seed of the check's inputs (replay --run --seed)
  int rank = 0;                        // the rank whose GPU ran it
  bool folderWritten = false;          // its code is in out/<variant>/ (written by rank 0)
};

// A GpuOutcome as text and back (a rank's outcome sent to rank 0).
std::string encodeGpuOutcome(const GpuOutcome& outcome);
GpuOutcome decodeGpuOutcome(const std::string& text);

struct DroppedVariant {
  std::string name;
  uint64_t hash = 0;
  double maxRelError = 0;  // infinite where an output held inf or NaN
  uint64_t seed = 0;       // the check's input seed: `replay --run --seed` draws the same inputs
  // Where its folder was kept (under out/dropped_on_gpu/), so the mismatch can be reproduced;
  // empty when the search wrote no folders.
  std::string folder;
};

struct ProfileRanking {
  Measurements measured;
  std::vector<DroppedVariant> dropped;
  std::set<std::string> written;  // measured variants whose folder under out holds their code
};

// The GPU this process uses out of `deviceCount`: under mpirun the ranks on one host take its
// GPUs in turn (distributed::deviceForRank), a single process the first.
int gpuOfThisRank(int deviceCount);

// Nullptr without `profile`; UserError when it is asked for and there is no GPU. The device is
// gpuOfThisRank's.
std::unique_ptr<runtime::CudaDriver> openGpuForProfile(bool profile);
// For a rank other than 0 timing one search's variants: its GPU where no other rank on the
// host takes it (distributed::hasGpuOfItsOwn), else nullptr (never an error).
std::unique_ptr<runtime::CudaDriver> openGpuOfItsOwn(bool profile);

// Collective (every rank calls it; `gpu` non-null on rank 0): the variants are dealt out to the
// ranks with a GPU, one at a time as each finishes one (distributed/work_queue.h); a rank
// generates the variant's code on one of its `threads` (0: every core), then checks it
// against the interpreter and times it, one variant at a time on its GPU. Rank 0 writes
// its variants' code into out/<variant>/ (a scratch folder when `out` is empty), the others into
// a scratch folder of theirs. On rank 0: one outcome per variant, in order, and each rank's
// share; progress and failures on stderr.
struct GpuMeasurements {
  std::vector<GpuOutcome> outcomes;
  std::vector<int> profiledByRank;  // variants timed by each rank
};
GpuMeasurements measureOnGpu(const runtime::CudaDriver* gpu, const search::SearchResult& result,
                             const plan::Target& target, const std::string& out, int threads);

// Drops the variants that do not match (moving their folders under `out`, if any, to
// out/dropped_on_gpu/<variant>/ as evidence, out of the variants' way), ranks the
// rest by measured time (those not profiled last, in their previous order) and sets the
// summary's verified count to what is left. Needs no GPU: the outcomes are data.
ProfileRanking rankByMeasuredTime(search::SearchResult& result,
                                  const std::vector<GpuOutcome>& outcomes, const std::string& out);

}  // namespace mugraph::driver
