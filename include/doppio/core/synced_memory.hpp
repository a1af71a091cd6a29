#pragma once

#include <cstddef>
#include <memory>

namespace doppio {

// One buffer that lives in host memory and, in a CUDA build, in device memory; copies are
// made lazily on access. The head says where the newest bytes are.
//
// A SyncedMemory may also be a view of a byte range inside another one (the parameter
// arena): a view has no storage of its own and forwards every access to its parent, so the
// whole arena moves between host and device as one piece.
class SyncedMemory {
 public:
  enum class Head { kUninitialized, kHost, kDevice, kSynced };

  SyncedMemory() = default;
  explicit SyncedMemory(std::size_t size);
  SyncedMemory(std::shared_ptr<SyncedMemory> parent, std::size_t offset, std::size_t size);
  ~SyncedMemory();
  SyncedMemory(const SyncedMemory&) = delete;
  SyncedMemory& operator=(const SyncedMemory&) = delete;

  const void* cpu_data();
  void* mutable_cpu_data();
  std::size_t size() const { return size_; }
  Head head() const;
  bool is_view() const { return parent_ != nullptr; }

 private:
  void ToCpu();

  std::shared_ptr<SyncedMemory> parent_;
  std::size_t offset_ = 0;
  void* cpu_ptr_ = nullptr;
  std::size_t size_ = 0;
  Head head_ = Head::kUninitialized;
};

}  // namespace doppio
