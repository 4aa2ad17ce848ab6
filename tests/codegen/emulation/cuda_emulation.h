// A CPU stand-in for the CUDA execution model, force-included (g++ -include) before a
// generated kernel.cu built with -DMUGRAPH_HOST_EMULATION, so tests can run generated
// kernels on machines without a GPU and compare them with the interpreter. Every CUDA
// thread of a block is a fiber (x86-64 context switch below); __syncthreads and the
// warp-collective PTX primitives (ldmatrix, mma.sync, shuffles) are barriers between
// fibers, and the primitives follow the PTX ISA's fragment layouts. Blocks run one after
// another, so shared memory is one static array.
#pragma once

#include <math.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "runtime/half_bits.h"

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__
#define __align__(bytes)

namespace mg_emu {

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};

struct Barrier {
  int participants = 0;
  int arrived = 0;
  unsigned long generation = 0;
};

// A cp.async in flight: it lands when its group is waited for, not when it is issued, so
// a kernel that reads a tile before cp_async_wait and __syncthreads reads stale bytes.
struct AsyncCopy {
  void* to;
  const void* from;
  int bytes;
  int sourceBytes;  // the rest is zero-filled
};

struct Fiber {
  void* sp = nullptr;
  std::vector<AsyncCopy> uncommitted;
  std::vector<std::vector<AsyncCopy>> groups;
  Dim3 thread;
  Dim3 blockIndex;
  Barrier* waiting = nullptr;
  unsigned long waitGeneration = 0;
  bool done = false;
};

struct WarpExchange {
  const void* pointers[32];
  unsigned a[32][4];
  unsigned b[32][2];
  float value[32];
};

struct Scheduler {
  std::vector<Fiber> fibers;
  std::vector<std::vector<unsigned char>> stacks;
  Fiber* current = nullptr;
  void* schedulerSp = nullptr;
  Barrier block;
  std::vector<Barrier> warps;
  std::vector<WarpExchange> exchange;
  void (*invoke)(void*) = nullptr;
  void* closure = nullptr;
};

inline Scheduler& scheduler() {
  static Scheduler instance;
  return instance;
}
inline Fiber& current() {
  return *scheduler().current;
}

}  // namespace mg_emu

// Saves the callee-saved registers and stack pointer of the running context into *save and
// resumes the context whose stack pointer is `load`.
extern "C" void mg_emu_switch(void** save, void* load);
asm(R"(
.text
.globl mg_emu_switch
.type mg_emu_switch,@function
mg_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size mg_emu_switch, .-mg_emu_switch
)");

namespace mg_emu {

inline void wait(Barrier& barrier) {
  Scheduler& s = scheduler();
  const unsigned long generation = barrier.generation;
  if (++barrier.arrived == barrier.participants) {
    barrier.arrived = 0;
    ++barrier.generation;
    return;
  }
  Fiber* fiber = s.current;
  fiber->waiting = &barrier;
  fiber->waitGeneration = generation;
  mg_emu_switch(&fiber->sp, s.schedulerSp);
}

// Copies the first `sourceBytes` of `bytes` and zero-fills the rest (cp.async's src-size).
inline void asyncCopy(void* to, const void* from, int bytes, int sourceBytes = -1) {
  current().uncommitted.push_back(
      AsyncCopy{to, from, bytes, sourceBytes < 0 ? bytes : sourceBytes});
}
inline void commitGroup() {
  Fiber& fiber = current();
  fiber.groups.push_back(std::move(fiber.uncommitted));
  fiber.uncommitted.clear();
}
inline void waitGroups(int pending) {
  Fiber& fiber = current();
  while (static_cast<int>(fiber.groups.size()) > pending) {
    for (const AsyncCopy& copy : fiber.groups.front()) {
      std::memcpy(copy.to, copy.from, static_cast<size_t>(copy.sourceBytes));
      std::memset(static_cast<char*>(copy.to) + copy.sourceBytes, 0,
                  static_cast<size_t>(copy.bytes - copy.sourceBytes));
    }
    fiber.groups.erase(fiber.groups.begin());
  }
}

inline int lane() {
  return static_cast<int>(current().thread.x & 31);
}
inline Barrier& warpBarrier() {
  return scheduler().warps[current().thread.x >> 5];
}
inline WarpExchange& exchange() {
  return scheduler().exchange[current().thread.x >> 5];
}

// ldmatrix .x4: lane i gives row i % 8 of matrix i / 8; lane l receives, of matrix j, row
// l / 4 elements 2(l % 4) and 2(l % 4) + 1 (with .trans: column l / 4 of rows 2(l % 4), +1).
inline void ldmatrix(unsigned (&r)[4], const void* row, bool transposed) {
  WarpExchange& x = exchange();
  const int l = lane();
  x.pointers[l] = row;
  wait(warpBarrier());
  for (int j = 0; j < 4; ++j) {
    unsigned short lo, hi;
    if (!transposed) {
      const auto* p = static_cast<const unsigned short*>(x.pointers[8 * j + l / 4]);
      lo = p[2 * (l % 4)];
      hi = p[2 * (l % 4) + 1];
    } else {
      lo = static_cast<const unsigned short*>(x.pointers[8 * j + 2 * (l % 4)])[l / 4];
      hi = static_cast<const unsigned short*>(x.pointers[8 * j + 2 * (l % 4) + 1])[l / 4];
    }
    r[j] = static_cast<unsigned>(lo) | (static_cast<unsigned>(hi) << 16);
  }
  wait(warpBarrier());
}

// The host runtime's conversions (one definition, header-only).
using ::mugraph::runtime::bfloat16BitsToFloat;
using ::mugraph::runtime::floatToBfloat16Bits;
using ::mugraph::runtime::floatToHalfBits;
using ::mugraph::runtime::halfBitsToFloat;

// mma.m16n8k16.row.col: lane l = 4g + t holds A rows g and g + 8, columns 2t, 2t+1 (+8);
// B columns (n) g, rows (k) 2t, 2t+1 (+8); C rows g, g + 8, columns 2t, 2t + 1.
inline void mma(float* c, const unsigned (&a)[4], const unsigned (&b)[2], bool bfloat) {
  WarpExchange& x = exchange();
  const int l = lane();
  for (int i = 0; i < 4; ++i) x.a[l][i] = a[i];
  for (int i = 0; i < 2; ++i) x.b[l][i] = b[i];
  wait(warpBarrier());
  const auto element = [&](unsigned word, int half) {
    const unsigned short bits = static_cast<unsigned short>(half ? word >> 16 : word & 0xffffu);
    return bfloat ? bfloat16BitsToFloat(bits) : halfBitsToFloat(bits);
  };
  const int g = l / 4;
  const int t = l % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i >= 2 ? 8 : 0);
    const int col = 2 * t + (i & 1);
    double sum = 0.0;
    for (int k = 0; k < 16; ++k) {
      const int aLane = (row % 8) * 4 + (k % 8) / 2;
      const int aReg = (row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0);
      const int bLane = col * 4 + (k % 8) / 2;
      const int bReg = k >= 8 ? 1 : 0;
      sum += static_cast<double>(element(x.a[aLane][aReg], k & 1)) *
             static_cast<double>(element(x.b[bLane][bReg], k & 1));
    }
    c[i] = static_cast<float>(c[i] + sum);
  }
  wait(warpBarrier());
}

inline float shuffleXor(float value, int offset) {
  WarpExchange& x = exchange();
  const int l = lane();
  x.value[l] = value;
  wait(warpBarrier());
  const float result = x.value[l ^ offset];
  wait(warpBarrier());
  return result;
}

}  // namespace mg_emu

inline void __syncthreads() {
  ::mg_emu::wait(::mg_emu::scheduler().block);
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline void __syncwarp(unsigned = 0xffffffffu) {
  ::mg_emu::wait(::mg_emu::warpBarrier());
}
inline float __shfl_xor_sync(unsigned, float value, int offset) {
  return ::mg_emu::shuffleXor(value, offset);
}

// Dynamic shared memory of the running block (the largest an sm_90 block may have), filled
// with kSharedPoison before each launch; the test harness checks that no kernel touches bytes
// past its plan's.
// C linkage, as the kernels' `extern __shared__` declarations (inside extern "C" functions)
// give it; clang insists the two agree.
extern "C" {
alignas(128) unsigned char mg_smem[227 * 1024];
}
constexpr unsigned char kSharedPoison = 0xff;

extern "C" unsigned char* mg_emu_shared_memory(unsigned long* bytes, unsigned char* poison) {
  *bytes = sizeof mg_smem;
  *poison = kSharedPoison;
  return mg_smem;
}

extern "C" void mg_emu_fiber_main() {
  mg_emu::Scheduler& s = mg_emu::scheduler();
  s.invoke(s.closure);
  s.current->done = true;
  mg_emu_switch(&s.current->sp, s.schedulerSp);
  __builtin_unreachable();
}

// Runs invoke(closure) as every thread of every block of the grid. Returns 0, or 1 with a
// message in `error` when the block's threads deadlock (a barrier not reached by all).
extern "C" int mg_emu_launch(void (*invoke)(void*), void* closure, unsigned gridX, unsigned gridY,
                             unsigned gridZ, unsigned threads, char* error, int errorBytes) {
  constexpr size_t kStackBytes = 256 * 1024;
  mg_emu::Scheduler& s = mg_emu::scheduler();
  s.invoke = invoke;
  s.closure = closure;
  s.fibers.assign(threads, mg_emu::Fiber{});
  s.stacks.resize(threads);
  for (auto& stack : s.stacks) stack.resize(kStackBytes);
  const unsigned warps = (threads + 31) / 32;
  s.warps.assign(warps, mg_emu::Barrier{});
  s.exchange.assign(warps, mg_emu::WarpExchange{});
  std::memset(mg_smem, kSharedPoison, sizeof mg_smem);
  for (unsigned bz = 0; bz < gridZ; ++bz) {
    for (unsigned by = 0; by < gridY; ++by) {
      for (unsigned bx = 0; bx < gridX; ++bx) {
        s.block = mg_emu::Barrier{static_cast<int>(threads), 0, 0};
        for (unsigned w = 0; w < warps; ++w) {
          const unsigned lanes = threads - 32 * w < 32 ? threads - 32 * w : 32;
          s.warps[w] = mg_emu::Barrier{static_cast<int>(lanes), 0, 0};
        }
        for (unsigned t = 0; t < threads; ++t) {
          mg_emu::Fiber& fiber = s.fibers[t];
          fiber = mg_emu::Fiber{};
          fiber.thread = {t, 0, 0};
          fiber.blockIndex = {bx, by, bz};
          auto top = reinterpret_cast<uintptr_t>(s.stacks[t].data() + kStackBytes) & ~uintptr_t{15};
          void** frame = reinterpret_cast<void**>(top - 64);
          for (int i = 0; i < 8; ++i) frame[i] = nullptr;
          frame[6] = reinterpret_cast<void*>(&mg_emu_fiber_main);
          fiber.sp = frame;
        }
        // Alternate the order threads run in between barriers, so that a missing barrier
        // shows up whichever thread writes first.
        unsigned remaining = threads;
        bool reversed = false;
        while (remaining > 0) {
          bool progressed = false;
          for (unsigned i = 0; i < threads; ++i) {
            mg_emu::Fiber& fiber = s.fibers[reversed ? threads - 1 - i : i];
            if (fiber.done) continue;
            if (fiber.waiting && fiber.waiting->generation == fiber.waitGeneration) continue;
            fiber.waiting = nullptr;
            s.current = &fiber;
            mg_emu_switch(&s.schedulerSp, fiber.sp);
            progressed = true;
            if (fiber.done) --remaining;
          }
          reversed = !reversed;
          if (!progressed) {
            std::snprintf(error, static_cast<size_t>(errorBytes),
                          "block (%u, %u, %u): threads deadlocked at a barrier", bx, by, bz);
            return 1;
          }
        }
      }
    }
  }
  return 0;
}

// What generated code reads as threadIdx and blockIdx: the running fiber's.
#define threadIdx (::mg_emu::current().thread)
#define blockIdx (::mg_emu::current().blockIndex)
