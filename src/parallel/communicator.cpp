#include "doppio/parallel/communicator.hpp"

#include <glog/logging.h>

#include <cstdlib>
#include <cstring>

#include "doppio/core/common.hpp"

namespace doppio {

std::size_t CommTypeSize(CommType type) {
  switch (type) {
    case CommType::kFloat:
      return 4;
    case CommType::kDouble:
      return 8;
    case CommType::kInt32:
      return 4;
    case CommType::kInt64:
      return 8;
    case CommType::kUInt64:
      return 8;
    case CommType::kByte:
      return 1;
  }
  return 1;
}

const char* CommTypeName(CommType type) {
  switch (type) {
    case CommType::kFloat:
      return "float";
    case CommType::kDouble:
      return "double";
    case CommType::kInt32:
      return "int32";
    case CommType::kInt64:
      return "int64";
    case CommType::kUInt64:
      return "uint64";
    case CommType::kByte:
      return "byte";
  }
  return "?";
}

void CommRequest::Wait() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;
  }
  if (wait_hook_) wait_hook_(+1);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [this] { return done_; });
  }
  if (wait_hook_) wait_hook_(-1);
}

bool CommRequest::Test() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

void CommRequest::MarkStarted(double time) {
  std::lock_guard<std::mutex> lock(mutex_);
  start_time_ = time;
}

void CommRequest::MarkDone(double time) {
  std::vector<std::function<void(const CommRequest&)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    end_time_ = time;
    done_ = true;
    callbacks.swap(done_callbacks_);
  }
  done_cv_.notify_all();
  for (const auto& callback : callbacks) callback(*this);
}

void CommRequest::OnDone(std::function<void(const CommRequest&)> callback) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!done_) {
      done_callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback(*this);
}

void Communicator::CheckRoot(int root, const std::string& label) const {
  DOPPIO_ENSURE(root >= 0 && root < size())
      << label << ": root rank " << root << " does not exist (" << size() << " ranks)";
}

void Communicator::BroadcastBytes(std::string* bytes, int root, const std::string& label) {
  std::uint64_t length = rank() == root ? bytes->size() : 0;
  Broadcast(&length, 1, CommType::kUInt64, root, label + " (size)");
  if (rank() != root) bytes->assign(length, '\0');
  if (length > 0) Broadcast(bytes->data(), length, CommType::kByte, root, label);
}

std::vector<std::string> Communicator::GatherBytes(const std::string& bytes, int root,
                                                   const std::string& label) {
  const std::vector<std::uint64_t> lengths =
      AllgatherValue<std::uint64_t>(bytes.size(), label + " (sizes)");
  std::vector<std::size_t> recv_bytes(lengths.begin(), lengths.end());
  std::string all;
  if (rank() == root) {
    std::size_t total = 0;
    for (std::size_t length : recv_bytes) total += length;
    all.assign(total, '\0');
  }
  IGatherv(bytes.data(), bytes.size(), all.data(), recv_bytes, root, label)->Wait();
  std::vector<std::string> parts;
  if (rank() == root) {
    std::size_t offset = 0;
    for (std::size_t length : recv_bytes) {
      parts.push_back(all.substr(offset, length));
      offset += length;
    }
  }
  return parts;
}

CommHandle SelfCommunicator::Done(const std::string& label, std::size_t bytes, int root) {
  DOPPIO_ENSURE(root == 0) << label << ": root rank " << root << " does not exist (1 rank)";
  auto handle = std::make_shared<CommRequest>(label, bytes);
  const double now = CommClockSeconds();
  handle->MarkStarted(now);
  handle->MarkDone(now);
  return handle;
}

CommHandle SelfCommunicator::IAllreduce(void*, std::size_t count, CommType type, ReduceOp,
                                        MemoryKind, const std::string& label) {
  return Done(label, count * CommTypeSize(type), 0);
}

CommHandle SelfCommunicator::IReduce(void*, std::size_t count, CommType type, ReduceOp, int root,
                                     MemoryKind, const std::string& label) {
  return Done(label, count * CommTypeSize(type), root);
}

CommHandle SelfCommunicator::IBroadcast(void*, std::size_t count, CommType type, int root,
                                        MemoryKind, const std::string& label) {
  return Done(label, count * CommTypeSize(type), root);
}

CommHandle SelfCommunicator::IAllgather(const void* send, void* recv, std::size_t count,
                                        CommType type, const std::string& label) {
  const std::size_t bytes = count * CommTypeSize(type);
  if (bytes > 0 && send != recv) std::memmove(recv, send, bytes);
  return Done(label, bytes, 0);
}

CommHandle SelfCommunicator::IBarrier(const std::string& label) { return Done(label, 0, 0); }

CommHandle SelfCommunicator::IGatherv(const void* send, std::size_t bytes, void* recv,
                                      const std::vector<std::size_t>&, int root,
                                      const std::string& label) {
  if (bytes > 0 && send != recv) std::memmove(recv, send, bytes);
  return Done(label, bytes, root);
}

void SelfCommunicator::Abort(int exit_code) {
  google::FlushLogFiles(google::GLOG_INFO);
  std::fflush(nullptr);
  std::_Exit(exit_code);
}

}  // namespace doppio
