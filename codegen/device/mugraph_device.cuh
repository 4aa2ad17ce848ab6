// mugraph's device library, the one header every generated kernel.cu includes. It and the
// headers below are embedded into the mugraph binary at build time (codegen/CMakeLists.txt)
// and handed to NVRTC in memory, so generated code needs no CUDA headers at all (no
// cuda_fp16.h, no CUTLASS). One header per architecture and facet; each guards what needs a
// newer GPU than sm_80, the minimum (cp.async, bf16 mma).
#pragma once

// Tests build generated kernels for the CPU (tests/codegen/emulation/): that header defines
// the PTX primitives of types.cuh, sm80_copy.cuh and sm80_mma.cuh (conversions, cp.async,
// ldmatrix, mma.sync), which then compile only for the GPU, and everything else here and in
// generated code runs unchanged.
#ifdef MUGRAPH_HOST_EMULATION
#include "mugraph_emulation.h"
#endif

// In dependency order (a header uses only those above it), so each stays its own block.
#include "types.cuh"  // f16, bf16, conversions, paired and chunked stores

#include "math.cuh"  // element-wise ops, warp reductions

#include "tiles.cuh"  // partial-tile extents, swizzled addressing

#include "sm80_copy.cuh"  // cp.async, ldmatrix

#include "sm80_mma.cuh"  // mma.sync and its fragments

#include "sm90_tma.cuh"  // bulk tensor copies, mbarriers

#include "sm90_wgmma.cuh"  // warpgroup multiplies

#include "sm90_ring.cuh"  // the producer/consumer ring over the mbarriers
