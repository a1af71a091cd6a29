// Kernel launches, queued on their stream. A kernel that never calls __syncthreads runs its
// threads one after the other; one that does runs each block's threads as fibers that
// switch at every barrier. A kernel's first launch always uses fibers and tells which kind
// it is.
#include <ucontext.h>

#include <cstdio>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "cuda_runtime.h"
#include "device_arena.hpp"
#include "runtime_state.hpp"

thread_local uint3 threadIdx;
thread_local uint3 blockIdx;
thread_local dim3 blockDim;
thread_local dim3 gridDim;

namespace doppio_emulation {
namespace {

constexpr size_t kFiberStack = 64 * 1024;
constexpr unsigned int kMaxThreadsPerBlock = 1024;

struct Fiber {
  ucontext_t context;
  std::vector<char> stack;
  bool done = false;
};

// Per host thread: the fibers of the block being run, and how to reach the scheduler.
struct FiberState {
  ucontext_t scheduler;
  std::vector<Fiber> fibers;
  Fiber* current = nullptr;
  bool in_fibers = false;
  bool synced = false;
  const std::function<void()>* thread = nullptr;
};
thread_local FiberState fiber_state;

void FiberMain() {
  FiberState& s = fiber_state;
  (*s.thread)();
  s.current->done = true;
}

void RunBlockInFibers(unsigned int threads) {
  FiberState& s = fiber_state;
  if (s.fibers.size() < threads) s.fibers.resize(threads);
  for (unsigned int t = 0; t < threads; ++t) {
    Fiber& f = s.fibers[t];
    if (f.stack.empty()) f.stack.resize(kFiberStack);
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack.data();
    f.context.uc_stack.ss_size = f.stack.size();
    f.context.uc_link = &s.scheduler;
    makecontext(&f.context, &FiberMain, 0);
    f.done = false;
  }
  // Each round runs every live thread up to its next barrier or its end: a barrier is
  // passed once all threads that have not exited reach it (as on sm_70 and later).
  for (bool live = true; live;) {
    live = false;
    for (unsigned int t = 0; t < threads; ++t) {
      Fiber& f = s.fibers[t];
      if (f.done) continue;
      threadIdx = uint3{t, 0, 0};
      s.current = &f;
      swapcontext(&s.scheduler, &f.context);
      live = live || !f.done;
    }
  }
  s.current = nullptr;
}

void RunBlockInOrder(unsigned int threads) {
  FiberState& s = fiber_state;
  for (unsigned int t = 0; t < threads; ++t) {
    threadIdx = uint3{t, 0, 0};
    (*s.thread)();
  }
}

// Kernels seen to synchronise, and kernels seen not to.
struct KernelKinds {
  std::mutex mutex;
  std::unordered_set<const void*> syncing;
  std::unordered_set<const void*> plain;
};
KernelKinds& Kinds() {
  static KernelKinds* kinds = new KernelKinds();
  return *kinds;
}

bool ValidShape(dim3 grid, dim3 block) {
  return block.x >= 1 && block.x <= kMaxThreadsPerBlock && block.y == 1 && block.z == 1 &&
         grid.x >= 1 && grid.x <= 0x7FFFFFFFu && grid.y == 1 && grid.z == 1;
}

}  // namespace

void RunGrid(const void* kernel, dim3 grid, dim3 block, cudaStream_t stream,
             std::function<void()> thread) {
  if (!ValidShape(grid, block)) {
    std::fprintf(stderr,
                 "CUDA emulation: kernel launched with grid (%u, %u, %u) and block (%u, %u, %u); "
                 "the emulation runs 1-D launches of 1 to %u threads and at least one block\n",
                 grid.x, grid.y, grid.z, block.x, block.y, block.z, kMaxThreadsPerBlock);
    SetLastError(cudaErrorInvalidConfiguration);
    return;
  }
  if (!IsValidStream(stream)) {
    SetLastError(cudaErrorInvalidResourceHandle);
    return;
  }
  Enqueue(stream, [kernel, grid, block, thread = std::move(thread)] {
    KernelKinds& kinds = Kinds();
    bool known_plain;
    {
      std::lock_guard<std::mutex> lock(kinds.mutex);
      known_plain = kinds.plain.count(kernel) > 0;
    }
    FiberState& s = fiber_state;
    s.thread = &thread;
    s.in_fibers = !known_plain;
    s.synced = false;
    gridDim = grid;
    blockDim = block;
    for (unsigned int b = 0; b < grid.x; ++b) {
      blockIdx = uint3{b, 0, 0};
      if (s.in_fibers) {
        RunBlockInFibers(block.x);
      } else {
        RunBlockInOrder(block.x);
      }
    }
    if (!known_plain) {
      std::lock_guard<std::mutex> lock(kinds.mutex);
      (s.synced ? kinds.syncing : kinds.plain).insert(kernel);
    }
    s.in_fibers = false;
    s.thread = nullptr;
  });
}

}  // namespace doppio_emulation

void __syncthreads() {
  auto& s = doppio_emulation::fiber_state;
  if (!s.in_fibers) {
    std::fprintf(stderr,
                 "CUDA emulation: a kernel called __syncthreads only on some launches; the "
                 "emulation needs every launch of a kernel to synchronise or none to\n");
    std::abort();
  }
  s.synced = true;
  swapcontext(&s.current->context, &s.scheduler);
}

unsigned int __umulhi(unsigned int a, unsigned int b) {
  return static_cast<unsigned int>((static_cast<unsigned long long>(a) * b) >> 32);
}

// Threads run one at a time, so read-modify-write is atomic.
int atomicMin(int* address, int value) {
  const int old = *address;
  if (value < old) *address = value;
  return old;
}

float atomicAdd(float* address, float value) {
  const float old = *address;
  *address = old + value;
  return old;
}

double atomicAdd(double* address, double value) {
  const double old = *address;
  *address = old + value;
  return old;
}

int atomicAdd(int* address, int value) {
  const int old = *address;
  *address = old + value;
  return old;
}
