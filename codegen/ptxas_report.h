// The resource report of ptxas (registers, spills, shared and local memory per entry), read
// from the NVRTC log of a cubin compile with --ptxas-options=-v. This is how CI on a machine
// without a GPU knows that every generated kernel assembles and does not spill.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mugraph::codegen {

struct KernelResources {
  std::string entry;
  int registers = 0;
  int64_t spillStoreBytes = 0;
  int64_t spillLoadBytes = 0;
  int64_t staticSharedBytes = 0;
  int64_t localBytes = 0;  // stack frame (local memory per thread)
  int barriers = 0;
  // ptxas serialized the entry's wgmma (C7515, "Potential Performance Loss"): each waits for
  // the one before, and the multiplies no longer overlap anything. A code generator bug.
  bool wgmmaSerialized = false;
};

// Entries in the order ptxas reports them; lines it does not know are skipped.
std::vector<KernelResources> parsePtxasReport(const std::string& log);

// The same facts read from the cubin itself, for every entry it defines: registers (the
// EIATTR_REGCOUNT records of `.nv.info`), the stack frame (EIATTR_FRAME_SIZE) and barriers
// (EIATTR_NUM_BARRIERS of `.nv.info.<entry>`). Spills are not recorded there, nor static
// shared memory as ptxas counts it (`.nv.shared.<entry>` adds the 1 KiB sm_90 reserves). NVRTC's log of a compile may lack the
// ptxas report (a compile NVRTC serves from the CUDA compute cache runs no ptxas: measured on
// an H200 host, docs/distributed_search.md), so these come from the cubin. An empty result where
// the bytes are not a 64-bit ELF file.
std::vector<KernelResources> cubinResources(const std::string& cubin);

}  // namespace mugraph::codegen
