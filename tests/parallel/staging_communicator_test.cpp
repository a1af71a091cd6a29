// The StagingCommunicator in one process, over a base that records what reaches it: chunking,
// two chunks in flight, the device fence, and the order in which operations reach the base.
#include "doppio/parallel/staging_communicator.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "doppio/core/common.hpp"
#include "fake_device.hpp"

namespace doppio {
namespace {

using test::FakeDevice;
using test::GatedDevice;

// A communicator of one rank whose allreduce doubles the buffer, as two ranks with equal
// data would. It takes buffers of one kind: host memory, or device memory as a CUDA-aware
// MPI does. Its operations complete at once, or, while `hold` is set, when the test
// releases them.
class RecordingBase : public SelfCommunicator {
 public:
  explicit RecordingBase(MemoryKind takes = MemoryKind::kHost) : takes_(takes) {}
  bool accepts_device_buffers() const override { return takes_ == MemoryKind::kDevice; }
  CommHandle IAllreduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                        MemoryKind where, const std::string& label) override {
    EXPECT_EQ(where, takes_) << label;
    float* values = static_cast<float*>(buffer);
    for (std::size_t i = 0; i < count; ++i) values[i] *= 2;
    return Record(SelfCommunicator::IAllreduce(buffer, count, type, op, where, label));
  }
  CommHandle IReduce(void* buffer, std::size_t count, CommType type, ReduceOp op, int root,
                     MemoryKind where, const std::string& label) override {
    EXPECT_EQ(where, takes_) << label;
    return Record(SelfCommunicator::IReduce(buffer, count, type, op, root, where, label));
  }
  CommHandle IBroadcast(void* buffer, std::size_t count, CommType type, int root, MemoryKind where,
                        const std::string& label) override {
    EXPECT_EQ(where, takes_) << label;
    return Record(SelfCommunicator::IBroadcast(buffer, count, type, root, where, label));
  }
  CommHandle IBarrier(const std::string& label) override {
    return Record(SelfCommunicator::IBarrier(label));
  }

  std::vector<std::string> labels() {
    std::lock_guard<std::mutex> lock(mutex_);
    return labels_;
  }
  void set_hold(bool hold) {
    std::lock_guard<std::mutex> lock(mutex_);
    hold_ = hold;
  }
  // Completes the operations held; returns how many there were.
  std::size_t Release() {
    std::vector<CommHandle> held;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held.swap(held_);
    }
    for (const CommHandle& handle : held) handle->MarkDone(CommClockSeconds());
    return held.size();
  }

 private:
  CommHandle Record(const CommHandle& done) {
    std::lock_guard<std::mutex> lock(mutex_);
    labels_.push_back(done->label());
    if (!hold_) return done;
    auto handle = std::make_shared<CommRequest>(done->label(), done->bytes());
    handle->MarkStarted(CommClockSeconds());
    held_.push_back(handle);
    return handle;
  }

  MemoryKind takes_;
  std::mutex mutex_;
  std::vector<std::string> labels_;
  bool hold_ = false;
  std::vector<CommHandle> held_;
};

TEST(StagingCommunicatorTest, DeviceBuffersGoToTheBaseInChunksThroughTwoPinnedBuffers) {
  auto base = std::make_shared<RecordingBase>();
  auto device = std::make_shared<FakeDevice>();
  {
    // 1000-byte chunks: 250 floats, so 2600 floats take 11.
    StagingCommunicator comm(base, device, 1000);
    EXPECT_EQ(comm.rank(), 0);
    EXPECT_EQ(comm.size(), 1);
    EXPECT_NE(comm.description().find("staged"), std::string::npos);
    std::vector<float> gradients(2600);
    for (std::size_t i = 0; i < gradients.size(); ++i) gradients[i] = float(i);
    auto handle = comm.IAllreduce(gradients.data(), gradients.size(), CommType::kFloat,
                                  ReduceOp::kSum, MemoryKind::kDevice, "gradients");
    handle->Wait();
    EXPECT_EQ(handle->bytes(), 2600 * sizeof(float));
    EXPECT_LE(handle->start_time(), handle->end_time());
    for (std::size_t i = 0; i < gradients.size(); ++i) ASSERT_EQ(gradients[i], 2.f * i) << i;
    EXPECT_EQ(base->labels(), std::vector<std::string>(11, "gradients"));
    EXPECT_EQ(device->to_host, 11);
    EXPECT_EQ(device->to_device, 11);
    EXPECT_EQ(device->allocations, 2);

    // Nothing to communicate: done without a copy or a collective of the base.
    comm.Allreduce(gradients.data(), 0, CommType::kFloat, ReduceOp::kSum, "empty",
                   MemoryKind::kDevice);
    EXPECT_EQ(base->labels().size(), 11u);
  }
  // Its pinned memory goes with the communicator.
  EXPECT_EQ(device->frees, device->allocations);
}

TEST(StagingCommunicatorTest, CudaAwareBaseGetsTheDeviceChunksWithoutCopies) {
  auto base = std::make_shared<RecordingBase>(MemoryKind::kDevice);
  auto device = std::make_shared<GatedDevice>();
  StagingCommunicator comm(base, device, 1000, DeviceBufferPath::kDirect);
  EXPECT_NE(comm.description().find("passed directly"), std::string::npos) << comm.description();
  std::vector<float> gradients(2600);
  for (std::size_t i = 0; i < gradients.size(); ++i) gradients[i] = float(i);
  auto handle = comm.IAllreduce(gradients.data(), gradients.size(), CommType::kFloat,
                                ReduceOp::kSum, MemoryKind::kDevice, "gradients");
  // The device work before it has not finished: nothing reaches the base.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(handle->Test());
  EXPECT_TRUE(base->labels().empty());
  device->open = true;
  handle->Wait();
  for (std::size_t i = 0; i < gradients.size(); ++i) ASSERT_EQ(gradients[i], 2.f * i) << i;
  EXPECT_EQ(base->labels(), std::vector<std::string>(11, "gradients"));
  EXPECT_EQ(device->to_host, 0);
  EXPECT_EQ(device->to_device, 0);
  EXPECT_EQ(device->allocations, 0);
}

TEST(StagingCommunicatorTest, DirectPathNeedsABaseThatTakesDeviceBuffers) {
  try {
    StagingCommunicator comm(std::make_shared<RecordingBase>(), std::make_shared<FakeDevice>(),
                             1000, DeviceBufferPath::kDirect);
    ADD_FAILURE() << "no Error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("does not take device buffers"), std::string::npos)
        << error.what();
  }
}

TEST(StagingCommunicatorTest, RootCopiesInOnlyForBroadcastAndOutOnlyForReduce) {
  auto base = std::make_shared<RecordingBase>();
  auto device = std::make_shared<FakeDevice>();
  StagingCommunicator comm(base, device, 1000);
  std::vector<float> values(300, 1.f);
  // The one rank is the root: a broadcast copies its buffer out but never back...
  comm.Broadcast(values.data(), values.size(), CommType::kFloat, 0, "broadcast",
                 MemoryKind::kDevice);
  EXPECT_EQ(device->to_host, 2);
  EXPECT_EQ(device->to_device, 0);
  // ...and a reduce brings the result back to it.
  comm.Reduce(values.data(), values.size(), CommType::kFloat, ReduceOp::kSum, 0, "reduce",
              MemoryKind::kDevice);
  EXPECT_EQ(device->to_host, 4);
  EXPECT_EQ(device->to_device, 2);
  // A root that does not exist is refused on the issuing thread.
  EXPECT_THROW(comm.IReduce(values.data(), values.size(), CommType::kFloat, ReduceOp::kSum, 1,
                            MemoryKind::kDevice, "bad root"),
               Error);
  EXPECT_THROW(comm.IBroadcast(values.data(), values.size(), CommType::kFloat, -1,
                               MemoryKind::kDevice, "bad root"),
               Error);
  EXPECT_EQ(base->labels(),
            (std::vector<std::string>{"broadcast", "broadcast", "reduce", "reduce"}));
}

TEST(StagingCommunicatorTest, AtMostTwoChunksInFlight) {
  auto base = std::make_shared<RecordingBase>();
  auto device = std::make_shared<FakeDevice>();
  StagingCommunicator comm(base, device, 1000);
  base->set_hold(true);
  std::vector<float> gradients(2600, 1.f);
  auto handle = comm.IAllreduce(gradients.data(), gradients.size(), CommType::kFloat,
                                ReduceOp::kSum, MemoryKind::kDevice, "held");
  std::size_t released = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!handle->Test() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    // Every chunk issued is held: the staging thread issues the next only as one completes.
    ASSERT_LE(base->labels().size(), released + 2);
    released += base->Release();
  }
  handle->Wait();
  EXPECT_EQ(released, 11u);
  for (float value : gradients) ASSERT_EQ(value, 2.f);
}

TEST(StagingCommunicatorTest, LaterOperationsReachTheBaseOnlyAfterTheStagedChunks) {
  auto base = std::make_shared<RecordingBase>();
  auto device = std::make_shared<GatedDevice>();
  StagingCommunicator comm(base, device, 1000);
  // Nothing staged ahead: a host operation goes straight to the base.
  EXPECT_TRUE(comm.IBarrier("first")->Test());
  EXPECT_EQ(base->labels(), std::vector<std::string>{"first"});

  std::vector<float> gradients(500, 1.f);
  auto staged = comm.IAllreduce(gradients.data(), gradients.size(), CommType::kFloat,
                                ReduceOp::kSum, MemoryKind::kDevice, "gated");
  std::vector<float> host(4, 3.f);
  auto behind = comm.IAllreduce(host.data(), host.size(), CommType::kFloat, ReduceOp::kSum,
                                MemoryKind::kHost, "behind");
  auto barrier = comm.IBarrier("barrier");
  EXPECT_EQ(behind->bytes(), 16u);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // The device work ahead of the staged collective has not finished: nothing moved.
  EXPECT_FALSE(staged->Test());
  EXPECT_FALSE(behind->Test());
  EXPECT_FALSE(barrier->Test());
  EXPECT_EQ(device->to_host, 0);
  EXPECT_EQ(base->labels().size(), 1u);
  std::fill(gradients.begin(), gradients.end(), 5.f);
  device->open = true;
  barrier->Wait();
  behind->Wait();
  staged->Wait();
  for (float value : gradients) ASSERT_EQ(value, 10.f);
  for (float value : host) ASSERT_EQ(value, 6.f);
  EXPECT_EQ(base->labels(),
            (std::vector<std::string>{"first", "gated", "gated", "behind", "barrier"}));
}

TEST(StagingCommunicatorTest, RefusesToBeBuiltWithoutItsParts) {
  auto base = std::make_shared<RecordingBase>();
  EXPECT_THROW(StagingCommunicator(nullptr, std::make_shared<FakeDevice>()), Error);
  EXPECT_THROW(StagingCommunicator(base, nullptr), Error);
  EXPECT_THROW(StagingCommunicator(base, std::make_shared<FakeDevice>(), 0), Error);
}

}  // namespace
}  // namespace doppio
