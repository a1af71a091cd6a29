#include "doppio/core/synced_memory.hpp"

#include <glog/logging.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace doppio {

namespace {
// 64-byte alignment keeps every row a whole number of cache lines for the SIMD kernels.
constexpr std::size_t kAlignment = 64;

void* AllocateHost(std::size_t size) {
  std::size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  void* ptr = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (ptr == nullptr) throw std::bad_alloc();
  return ptr;
}
}  // namespace

SyncedMemory::SyncedMemory(std::size_t size) : size_(size) {}

SyncedMemory::SyncedMemory(std::shared_ptr<SyncedMemory> parent, std::size_t offset,
                           std::size_t size)
    : parent_(std::move(parent)), offset_(offset), size_(size) {
  CHECK(parent_ != nullptr);
  CHECK_LE(offset_ + size_, parent_->size());
}

SyncedMemory::~SyncedMemory() { std::free(cpu_ptr_); }

SyncedMemory::Head SyncedMemory::head() const { return parent_ ? parent_->head() : head_; }

void SyncedMemory::ToCpu() {
  switch (head_) {
    case Head::kUninitialized:
      cpu_ptr_ = AllocateHost(size_);
      std::memset(cpu_ptr_, 0, size_);
      head_ = Head::kHost;
      break;
    case Head::kHost:
    case Head::kSynced:
      break;
    case Head::kDevice:
      LOG(FATAL) << "device memory requested in a build without CUDA";
  }
}

const void* SyncedMemory::cpu_data() {
  if (parent_) return static_cast<const char*>(parent_->cpu_data()) + offset_;
  ToCpu();
  return cpu_ptr_;
}

void* SyncedMemory::mutable_cpu_data() {
  if (parent_) return static_cast<char*>(parent_->mutable_cpu_data()) + offset_;
  ToCpu();
  head_ = Head::kHost;
  return cpu_ptr_;
}

}  // namespace doppio
