// sm_90 bulk tensor copies (TMA) and the mbarriers that count their bytes. Used only by
// kernels the plan puts on the warpgroup path; the emulation build has none of them (GPU
// tests cover them).
#pragma once

namespace mg {

#if !defined(MUGRAPH_HOST_EMULATION) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

// The opaque 128-byte tensor map (CUtensorMap) a bulk tensor copy reads, passed by value as a
// __grid_constant__ kernel parameter; the host encodes it (codegen/README.md, "Tensor maps").
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

// mbarrier: a shared-memory barrier that completes a phase when `count` arrivals and every
// expected transaction byte have arrived. Phases alternate parity 0, 1, 0, ...
__device__ __forceinline__ void mbarrier_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bar)), "r"(count));
}
// Makes initialized mbarriers visible to the async proxy (the copy engine).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// Orders this thread's ordinary shared-memory accesses before later async-proxy accesses.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void mbarrier_arrive(unsigned long long* bar) {
  asm volatile(
      "{\n.reg .b64 state;\nmbarrier.arrive.release.cta.shared::cta.b64 state, [%0];\n}\n" ::"r"(
          shared_address(bar))
      : "memory");
}
// One arrival that also expects `bytes` of bulk-copy transactions in the current phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile(
      "{\n.reg .b64 state;\nmbarrier.arrive.expect_tx.release.cta.shared::cta.b64 state, [%0], "
      "%1;\n}\n" ::"r"(shared_address(bar)),
      "r"(bytes)
      : "memory");
}
// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbarrier_wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\nwait_%=:\n"
      "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(shared_address(bar)),
      "r"(parity)
      : "memory");
}

// cp.async.bulk.tensor: the box of `map` at element coordinates (c0 innermost, c1, c2, c3)
// lands in shared memory at `to` (laid out and swizzled as the map says); its bytes complete
// a transaction on `bar`.
__device__ __forceinline__ void bulk_tensor_load_2d(void* to, const TensorMap* map,
                                                    unsigned long long* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%2, %3}], [%4];\n" ::"r"(shared_address(to)),
      "l"(map), "r"(c0), "r"(c1), "r"(shared_address(bar))
      : "memory");
}
__device__ __forceinline__ void bulk_tensor_load_3d(void* to, const TensorMap* map,
                                                    unsigned long long* bar, int c0, int c1,
                                                    int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%2, %3, %4}], [%5];\n" ::"r"(shared_address(to)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(shared_address(bar))
      : "memory");
}
__device__ __forceinline__ void bulk_tensor_load_4d(void* to, const TensorMap* map,
                                                    unsigned long long* bar, int c0, int c1, int c2,
                                                    int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(shared_address(to)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(shared_address(bar))
      : "memory");
}
// The multicast forms: the box lands at `to`'s offset in the shared memory of every block of
// the cluster whose rank bit is set in `ctaMask`, completing bytes on the mbarrier at `bar`'s
// offset in each of them.
__device__ __forceinline__ void bulk_tensor_load_2d_multicast(void* to, const TensorMap* map,
                                                              unsigned long long* bar,
                                                              unsigned short ctaMask, int c0,
                                                              int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(shared_address(to)),
      "l"(map), "r"(c0), "r"(c1), "r"(shared_address(bar)), "h"(ctaMask)
      : "memory");
}
__device__ __forceinline__ void bulk_tensor_load_3d_multicast(void* to, const TensorMap* map,
                                                              unsigned long long* bar,
                                                              unsigned short ctaMask, int c0,
                                                              int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(shared_address(to)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(shared_address(bar)), "h"(ctaMask)
      : "memory");
}
__device__ __forceinline__ void bulk_tensor_load_4d_multicast(void* to, const TensorMap* map,
                                                              unsigned long long* bar,
                                                              unsigned short ctaMask, int c0,
                                                              int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3, %4, %5}], [%6], %7;\n" ::"r"(shared_address(to)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(shared_address(bar)), "h"(ctaMask)
      : "memory");
}

// Thread-block clusters: this block's rank in its cluster, a barrier of every thread of the
// cluster (release, then acquire), and an arrival on the mbarrier at `bar`'s offset in the
// shared memory of the cluster's block `rank`. The arrival releases at CTA scope: a consumer
// arrives once its multiplies finished reading the stage, and nothing it wrote must be seen
// by the other block (a cluster-scope release fences every arrival: measured 1.6x slower).
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::
                   : "memory");
}
__device__ __forceinline__ void mbarrier_arrive_cluster(unsigned long long* bar, unsigned rank) {
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cta.shared::cluster.b64 _, [remote];\n}\n" ::"r"(
          shared_address(bar)),
      "r"(rank)
      : "memory");
}

// Fetches a tensor map into the constant cache ahead of its first use.
__device__ __forceinline__ void prefetch_tensor_map(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

#endif  // sm_90

}  // namespace mg
