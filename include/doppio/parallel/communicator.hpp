#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace doppio {

// Element types a collective carries.
enum class CommType { kFloat, kDouble, kInt32, kInt64, kUInt64, kByte };
std::size_t CommTypeSize(CommType type);
const char* CommTypeName(CommType type);

template <typename T>
constexpr CommType CommTypeOf();
template <>
constexpr CommType CommTypeOf<float>() {
  return CommType::kFloat;
}
template <>
constexpr CommType CommTypeOf<double>() {
  return CommType::kDouble;
}
template <>
constexpr CommType CommTypeOf<std::int32_t>() {
  return CommType::kInt32;
}
template <>
constexpr CommType CommTypeOf<std::int64_t>() {
  return CommType::kInt64;
}
template <>
constexpr CommType CommTypeOf<std::uint64_t>() {
  return CommType::kUInt64;
}

enum class ReduceOp { kSum, kMax, kMin };

// Where a buffer lives. Device buffers go to an MPI that is not CUDA-aware through pinned
// host memory, chunk by chunk (see StagingCommunicator).
enum class MemoryKind { kHost, kDevice };

// Seconds on the steady clock, the time base of every communication timestamp.
inline double CommClockSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The handle of one non-blocking operation. The buffers it names must stay untouched until
// Wait returns (or Test answers true). start_time and end_time are when the communication
// actually began and finished on this rank (CommClockSeconds); valid once done.
class CommRequest {
 public:
  CommRequest(std::string label, std::size_t bytes)
      : label_(std::move(label)), bytes_(bytes), issue_time_(CommClockSeconds()) {}
  CommRequest(const CommRequest&) = delete;
  CommRequest& operator=(const CommRequest&) = delete;

  void Wait();
  bool Test();
  const std::string& label() const { return label_; }
  std::size_t bytes() const { return bytes_; }
  // When it was issued (this object made), then started and finished.
  double issue_time() const { return issue_time_; }
  double start_time() const { return start_time_; }
  double end_time() const { return end_time_; }

  // For implementations.
  void MarkStarted(double time);
  void MarkDone(double time);
  // Called with +1 when a thread starts waiting in Wait, -1 when it stops (a communicator
  // drives progress harder while someone waits).
  void set_wait_hook(std::function<void(int)> hook) { wait_hook_ = std::move(hook); }
  // Runs `callback` once the operation is done: at once on this thread when it is already,
  // else on the thread that completes it, which it must not hold up. A communicator that
  // wraps another learns so when the operations it issued there are over.
  void OnDone(std::function<void(const CommRequest&)> callback);

 private:
  std::string label_;
  std::size_t bytes_;
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  double issue_time_ = 0;
  double start_time_ = 0;
  double end_time_ = 0;
  std::function<void(int)> wait_hook_;
  std::vector<std::function<void(const CommRequest&)>> done_callbacks_;
};
using CommHandle = std::shared_ptr<CommRequest>;

// The collectives a data-parallel trainer needs, over the ranks of one job. Every operation
// is collective: all ranks issue the same operations in the same order (a mismatch is what
// hangs jobs; the trainer checks its bucket layout at start-up). Non-blocking calls return
// a handle at once; operations start in the order they were issued. The blocking forms
// issue and wait. Reductions are in place.
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank and size among the ranks of this node (MPI's shared-memory split): picks the device.
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  // A description for the log ("MPI (Open MPI v4.1.4), 2 ranks").
  virtual std::string description() const = 0;
  // Whether collectives take MemoryKind::kDevice buffers as they are (a CUDA-aware MPI);
  // otherwise a device buffer must be staged through host memory (StagingCommunicator).
  virtual bool accepts_device_buffers() const { return false; }

  virtual CommHandle IAllreduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                                MemoryKind where, const std::string& label) = 0;
  // The result lands in root's buffer; the others' buffers are only read.
  virtual CommHandle IReduce(void* buffer, std::size_t count, CommType type, ReduceOp op, int root,
                             MemoryKind where, const std::string& label) = 0;
  virtual CommHandle IBroadcast(void* buffer, std::size_t count, CommType type, int root,
                                MemoryKind where, const std::string& label) = 0;
  // recv receives size() * count elements: rank r's send at r * count. Host buffers.
  virtual CommHandle IAllgather(const void* send, void* recv, std::size_t count, CommType type,
                                const std::string& label) = 0;
  virtual CommHandle IBarrier(const std::string& label) = 0;
  // Root receives rank r's `bytes` bytes at recv + (the sum of recv_bytes[0..r)); recv and
  // recv_bytes (one entry per rank) matter on root only. Host buffers.
  virtual CommHandle IGatherv(const void* send, std::size_t bytes, void* recv,
                              const std::vector<std::size_t>& recv_bytes, int root,
                              const std::string& label) = 0;

  // A hint that now is a good moment to drive the operations in flight (the trainer calls it
  // between layers of backward); cheap, and a no-op where progress needs no help.
  virtual void Poke() {}

  // Makes the device's compute stream wait for the collectives on device buffers issued so
  // far, for a communicator whose device work runs on a stream of its own (NCCL). Where a
  // completed handle means the result is already in device memory (the staged path), a
  // no-op.
  virtual void JoinDeviceWork() {}

  // Seconds a started operation may take before the job is aborted with a message naming
  // the ranks that did not arrive; 0 waits forever.
  virtual void set_timeout(double seconds) = 0;
  virtual double timeout() const = 0;
  // Ends the whole job at once (every rank), after `reason` was logged. Never returns.
  [[noreturn]] virtual void Abort(int exit_code) = 0;

  // Blocking forms.
  void Allreduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                 const std::string& label = "allreduce", MemoryKind where = MemoryKind::kHost) {
    IAllreduce(buffer, count, type, op, where, label)->Wait();
  }
  void Broadcast(void* buffer, std::size_t count, CommType type, int root,
                 const std::string& label = "broadcast", MemoryKind where = MemoryKind::kHost) {
    IBroadcast(buffer, count, type, root, where, label)->Wait();
  }
  void Reduce(void* buffer, std::size_t count, CommType type, ReduceOp op, int root,
              const std::string& label = "reduce", MemoryKind where = MemoryKind::kHost) {
    IReduce(buffer, count, type, op, root, where, label)->Wait();
  }
  void Allgather(const void* send, void* recv, std::size_t count, CommType type,
                 const std::string& label = "allgather") {
    IAllgather(send, recv, count, type, label)->Wait();
  }
  void Barrier(const std::string& label = "barrier") { IBarrier(label)->Wait(); }

  // Conveniences built on the above.
  template <typename T>
  std::vector<T> AllgatherValue(T value, const std::string& label = "allgather") {
    std::vector<T> all(size());
    Allgather(&value, all.data(), 1, CommTypeOf<T>(), label);
    return all;
  }
  // Every rank ends with root's bytes.
  void BroadcastBytes(std::string* bytes, int root, const std::string& label = "broadcast");
  // Root receives every rank's bytes, in rank order; the others an empty vector.
  std::vector<std::string> GatherBytes(const std::string& bytes, int root,
                                       const std::string& label = "gather");

 protected:
  // Throws Error unless `root` is a rank of this communicator.
  void CheckRoot(int root, const std::string& label) const;
};

// The one-rank communicator of a process that was not started by an MPI launcher: every
// collective is complete as soon as it is issued.
class SelfCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  std::string description() const override { return "a single process (no MPI launcher)"; }
  CommHandle IAllreduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                        MemoryKind where, const std::string& label) override;
  CommHandle IReduce(void* buffer, std::size_t count, CommType type, ReduceOp op, int root,
                     MemoryKind where, const std::string& label) override;
  CommHandle IBroadcast(void* buffer, std::size_t count, CommType type, int root, MemoryKind where,
                        const std::string& label) override;
  CommHandle IAllgather(const void* send, void* recv, std::size_t count, CommType type,
                        const std::string& label) override;
  CommHandle IBarrier(const std::string& label) override;
  CommHandle IGatherv(const void* send, std::size_t bytes, void* recv,
                      const std::vector<std::size_t>& recv_bytes, int root,
                      const std::string& label) override;
  void set_timeout(double seconds) override { timeout_ = seconds; }
  double timeout() const override { return timeout_; }
  [[noreturn]] void Abort(int exit_code) override;

 private:
  CommHandle Done(const std::string& label, std::size_t bytes, int root);
  double timeout_ = 0;
};

}  // namespace doppio
