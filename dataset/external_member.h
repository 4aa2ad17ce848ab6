// External members of a dataset class: kernels another compiler (Triton, CUTLASS, TVM) wrote
// for a class's program, added to the dataset beside our own variants. A generator
// (tools/python/add_external_members.py) writes one folder per member:
//
//   member.json    {"format": "mugraph.external_member", "version": 1, "source": {"compiler",
//                  "version", "language", "file", "command"}}: what wrote the kernel and the
//                  command that regenerates it
//   program.mg     the class's program, which the kernel claims to compute
//   <source file>  the kernel as its compiler takes it (kernel.py, kernel.cu, ...)
//   <arch>.ptx     its PTX
//   manifest.json  its complete launch ABI in the format of codegen/README.md: the tensors,
//                  each kernel's entry, grid, block, dynamic shared memory and every
//                  parameter in order (compiler-added ones, such as Triton's scratch
//                  pointers, as workspace tensors)
//
// `mugraph dataset add DIR FOLDER...` checks each folder's ABI against its program and PTX
// and copies it in as DIR/<class>/<compiler>-<first 16 hex of the PTX's sha256>, with a row
// whose evidence is gpu-random-test, unchecked until `dataset check --run --record`.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/ir.h"

namespace mugraph::dataset {

inline constexpr const char* kMemberFile = "member.json";
inline constexpr const char* kMemberFormat = "mugraph.external_member";
inline constexpr const char* kMemberProgramFile = "program.mg";

// Everything that keeps `folder`'s kernels from being launched as the program says, one line
// each: a missing file, a tensor the program has and the manifest lacks (or with another
// shape, dtype, layout or role), an entry the PTX lacks or declares with another number of
// parameters than the manifest lists. Empty when the ABI is complete.
std::vector<std::string> externalAbiProblems(const std::string& folder,
                                             const graph::Program& program);

// The source block of member.json; UserError naming the field of anything missing.
nlohmann::json readMemberSource(const std::string& folder);

// Adds the member in `folder` to the dataset in `datasetDir` (created if needed); returns its
// "<class>/<variant>". UserError, naming the folder, when its ABI is incomplete.
std::string addExternalMember(const std::string& datasetDir, const std::string& folder);

}  // namespace mugraph::dataset
