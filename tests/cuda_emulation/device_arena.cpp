#include "device_arena.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

namespace doppio_emulation {
namespace {

constexpr size_t kReserved = size_t(1) << 36;  // 64 GiB of address space, no memory
constexpr size_t kAlignment = 256;             // as cudaMalloc

struct Block {
  char* pages;     // first data page
  size_t n_pages;  // data pages; a guard page follows
  size_t bytes;    // as asked for
};

class Arena {
 public:
  Arena() {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* base =
        mmap(nullptr, kReserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
      std::perror("CUDA emulation: cannot reserve the device address range");
      std::abort();
    }
    base_ = static_cast<char*>(base);
    InstallFaultHandler();
  }

  std::recursive_mutex& mutex() { return mutex_; }

  void Open() {
    if (open_++ > 0) return;
    for (const auto& [data, block] : live_) Protect(block.pages, block.n_pages, true);
  }

  void Close() {
    if (--open_ > 0) return;
    if (top_ > 0) mprotect(base_, top_, PROT_NONE);
  }

  void* Allocate(size_t bytes) {
    const size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    const size_t n_pages = (rounded + page_ - 1) / page_;
    char* pages = nullptr;
    auto reuse = free_.find(n_pages);
    if (reuse != free_.end()) {
      pages = reuse->second;
      free_.erase(reuse);
    } else {
      if (top_ + (n_pages + 1) * page_ > kReserved) return nullptr;
      pages = base_ + top_;
      top_ += (n_pages + 1) * page_;
    }
    char* data = pages + n_pages * page_ - rounded;
    live_[data] = Block{pages, n_pages, bytes};
    in_use_ += bytes;
    Protect(pages, n_pages, true);
    std::memset(pages, 0xFF, n_pages * page_);
    if (open_ == 0) Protect(pages, n_pages, false);
    return data;
  }

  bool Free(void* pointer) {
    auto it = live_.find(static_cast<char*>(pointer));
    if (it == live_.end()) return false;
    const Block block = it->second;
    live_.erase(it);
    in_use_ -= block.bytes;
    Protect(block.pages, block.n_pages, false);
    if (block.n_pages > 256) madvise(block.pages, block.n_pages * page_, MADV_DONTNEED);
    free_.emplace(block.n_pages, block.pages);
    return true;
  }

  bool IsRange(const void* pointer, size_t bytes) const {
    const char* p = static_cast<const char*>(pointer);
    auto it = live_.upper_bound(const_cast<char*>(p));
    if (it == live_.begin()) return false;
    --it;
    return p >= it->first && p + bytes <= it->first + it->second.bytes;
  }

  bool IsAddress(const void* pointer) const {
    const char* p = static_cast<const char*>(pointer);
    return p >= base_ && p < base_ + kReserved;
  }

  size_t InUse() const { return in_use_; }

 private:
  void Protect(char* pages, size_t n_pages, bool accessible) {
    if (mprotect(pages, n_pages * page_, accessible ? PROT_READ | PROT_WRITE : PROT_NONE) != 0) {
      std::perror("CUDA emulation: mprotect");
      std::abort();
    }
  }

  static void OnFault(int signal, siginfo_t* info, void* context);
  void InstallFaultHandler() {
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_sigaction = &Arena::OnFault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previous_);
  }

  size_t page_ = 4096;
  char* base_ = nullptr;
  size_t top_ = 0;
  int open_ = 0;
  size_t in_use_ = 0;
  std::map<char*, Block> live_;
  std::multimap<size_t, char*> free_;
  std::recursive_mutex mutex_;
  static struct sigaction previous_;
};

struct sigaction Arena::previous_;

// The emulated device is process-wide, as a real one is.
Arena& TheArena() {
  static Arena* arena = new Arena();
  return *arena;
}

void Arena::OnFault(int signal, siginfo_t* info, void* context) {
  Arena& arena = TheArena();
  if (arena.IsAddress(info->si_addr)) {
    char message[256];
    const bool in_device_op = arena.open_ > 0;
    const int length =
        std::snprintf(message, sizeof(message), "CUDA emulation: %s at device address %p\n",
                      in_device_op ? "a kernel or copy ran outside its buffer (memcheck)"
                                   : "host code dereferenced a device pointer",
                      info->si_addr);
    if (write(STDERR_FILENO, message, static_cast<size_t>(length)) < 0) std::abort();
  }
  // Returning re-runs the faulting access, which the previous handler (glog's stack dump)
  // or the default action then deals with.
  sigaction(SIGSEGV, &previous_, nullptr);
  (void)signal;
  (void)context;
}

}  // namespace

std::recursive_mutex& DeviceMutex() { return TheArena().mutex(); }

DeviceAccess::DeviceAccess() : lock_(TheArena().mutex()) { TheArena().Open(); }
DeviceAccess::~DeviceAccess() { TheArena().Close(); }

void* DeviceAllocate(size_t bytes) {
  std::lock_guard<std::recursive_mutex> lock(TheArena().mutex());
  return TheArena().Allocate(bytes);
}

bool DeviceFree(void* pointer) {
  std::lock_guard<std::recursive_mutex> lock(TheArena().mutex());
  return TheArena().Free(pointer);
}

bool IsDeviceRange(const void* pointer, size_t bytes) {
  std::lock_guard<std::recursive_mutex> lock(TheArena().mutex());
  return TheArena().IsRange(pointer, bytes);
}

bool IsDeviceAddress(const void* pointer) { return TheArena().IsAddress(pointer); }

size_t DeviceBytesInUse() {
  std::lock_guard<std::recursive_mutex> lock(TheArena().mutex());
  return TheArena().InUse();
}

}  // namespace doppio_emulation
