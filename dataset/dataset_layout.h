// How an equivalent-PTX dataset is laid out on disk, in one place:
//
//   DIR/manifest.jsonl             one row per variant, sorted by class then variant
//   DIR/classes.json               each class's members and what "equivalent" means
//   DIR/<class>/<variant>/         schedule.json, kernel.cu, <arch>.ptx, manifest.json,
//                                  resources.json
//   DIR/<class>/<compiler>-<hash>/ an external member (external_member.h): member.json,
//                                  program.mg, its source, <arch>.ptx, manifest.json
//
// A class is one program (id: its name and canonical program hash); a variant is one
// schedule, the one in its schedule.json (id: graph::variantName, "v" + its canonical
// schedule hash), so names never depend on run order.
#pragma once

#include <string>

#include "graph/ir.h"

namespace mugraph::dataset {

inline constexpr const char* kManifestFile = "manifest.jsonl";
inline constexpr const char* kClassesFile = "classes.json";
inline constexpr const char* kRowFormat = "mugraph.dataset.row";

// An external member's evidence: level kEvidenceGpu, and a status that starts unchecked and
// becomes passed or failed when `dataset check --run --record` has run it on a GPU.
inline constexpr const char* kEvidenceGpu = "gpu-random-test";
inline constexpr const char* kStatusUnchecked = "unchecked";
inline constexpr const char* kStatusPassed = "passed";
inline constexpr const char* kStatusFailed = "failed";

// What membership of one class guarantees; written into classes.json.
inline constexpr const char* kEquivalenceStatement =
    "All variants of a class compute the same outputs as the class's program, for the input "
    "shapes and dtypes given, as whole multi-kernel programs (every kernel of a variant, "
    "launched in manifest order, together), up to floating-point reassociation and rounding: "
    "each was checked by float tests in double at several input scales and, where every op "
    "has a finite-field meaning (level finite-field), by finite-field fingerprints whose "
    "false-accept probability is at most the stated bound. Variants differ in how they "
    "schedule the computation (kernels, grids, tiles, loops), not in what they compute. "
    "External members (kernels written by other compilers: Triton, CUTLASS, TVM) carry "
    "weaker evidence, level gpu-random-test: they were launched from their manifest on a GPU "
    "and matched the class's program within the stated tolerance on fresh random inputs at "
    "several spreads; one that failed is listed under excluded with the reason, not as a "
    "member.";

std::string classId(const graph::Program& program);  // "<name>-<16 hex>"

}  // namespace mugraph::dataset
