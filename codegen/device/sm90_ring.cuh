// The producer/consumer ring of the sm_90 warpgroup kernels (plan/paths/warpgroup_ring.h):
// `Stages` shared-memory stages, each with a `full` mbarrier (its copies landed) and an
// `empty` one (every consumer warp is done reading it). Ring iteration g uses stage
// g % Stages in round g / Stages; a barrier's phase parity in a round is the round's low bit.
// Keeping that arithmetic here leaves a generated kernel to print only its loads, its
// multiplies and its epilogue around these calls. Included by mugraph_device.cuh after the
// mbarrier primitives it uses (sm90_tma.cuh).
#pragma once

#if !defined(MUGRAPH_HOST_EMULATION) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

namespace mg {

template <int Stages, int ClusterBlocks = 1>
struct Ring {
  unsigned long long* full;  // full[Stages], then empty[Stages]: the plan's barrier offset

  __device__ __forceinline__ unsigned long long* empty() const { return full + Stages; }

  // One thread, before the block's first barrier: a stage fills on `fillArrivals` arrivals
  // (the copy thread's, with the bytes it expects, and those of threads that gather with
  // cp.async) and empties on `consumerWarps` arrivals from every block of the cluster (whose
  // copies multicast into this block's stage).
  __device__ __forceinline__ void init(unsigned consumerWarps, unsigned fillArrivals = 1) const {
    for (int s = 0; s < Stages; ++s) {
      mbarrier_init(&full[s], fillArrivals);
      mbarrier_init(&empty()[s], consumerWarps * ClusterBlocks);
    }
  }
  // The copy thread: iteration g's stage, once the consumers released its previous round.
  __device__ __forceinline__ int acquire(int g) const {
    const int s = g % Stages;
    if (g >= Stages) mbarrier_wait(&empty()[s], ((g / Stages) - 1) & 1);
    return s;
  }
  // A consumer: iteration g's stage, once its copies landed.
  __device__ __forceinline__ int wait(int g) const {
    const int s = g % Stages;
    mbarrier_wait(&full[s], (g / Stages) & 1);
    return s;
  }
  // A consumer warp is done with iteration g's stage (its lane 0 arrives for the warp, on the
  // stage's `empty` barrier in every block of the cluster).
  __device__ __forceinline__ void release(int g, int lane) const {
    if (lane != 0) return;
    if constexpr (ClusterBlocks == 1) {
      mbarrier_arrive(&empty()[g % Stages]);
    } else {
      for (int rank = 0; rank < ClusterBlocks; ++rank) {
        mbarrier_arrive_cluster(&empty()[g % Stages], rank);
      }
    }
  }
};

// A copy thread that gathers with cp.async (rows the copy engine cannot address): once at
// most `Pending` of its committed groups are in flight, the chunks of the group before them
// have landed; it makes them visible to the multiplies' async proxy and arrives on `full`,
// the barrier of that group's stage.
template <int Pending>
__device__ __forceinline__ void gathered_stage_landed(unsigned long long* full) {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
  fence_proxy_async_shared();
  mbarrier_arrive(full);
}

// Turn-taking among the consumer warpgroups of a block (FA3's ping-pong): consumer c waits on
// named barrier 1 + c before issuing its multiplies, then opens the next consumer's turn.
// Each barrier counts two warpgroups: the one that waits and the one that arrives. The
// tensor cores then run one consumer's multiplies while the others compute their softmax.
template <int Consumers, int WarpgroupThreads>
struct Turns {
  int consumer;

  __device__ __forceinline__ void wait() const {
    asm volatile("bar.sync %0, %1;" ::"r"(1 + consumer), "n"(2 * WarpgroupThreads) : "memory");
  }
  __device__ __forceinline__ void pass() const {
    asm volatile("bar.arrive %0, %1;" ::"r"(1 + (consumer + 1) % Consumers),
                 "n"(2 * WarpgroupThreads)
                 : "memory");
  }
};

}  // namespace mg

#endif  // sm_90
