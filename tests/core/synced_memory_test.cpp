// SyncedMemory's host bytes in a non-canonical layout (HostLayout): only the raw accessors
// see them; every other accessor, and Blob's, converts them first. The layout here is a fake
// one, the floats in reverse order, which core can test without oneDNN.
#include "doppio/core/synced_memory.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "doppio/core/blob.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

class Reversed : public HostLayout {
 public:
  void ToCanonical(void* bytes, std::size_t size) const override {
    ++conversions;
    float* values = static_cast<float*>(bytes);
    std::reverse(values, values + size / sizeof(float));
  }
  mutable int conversions = 0;
};

// Writes 0, 1, ..., n - 1 into `memory` in the reversed layout.
std::shared_ptr<Reversed> WriteReversed(SyncedMemory& memory, int n) {
  auto layout = std::make_shared<Reversed>();
  float* bytes = static_cast<float*>(memory.mutable_raw_cpu_data(layout));
  for (int i = 0; i < n; ++i) bytes[n - 1 - i] = float(i);
  return layout;
}

void ExpectCanonical(const void* bytes, int n) {
  const float* values = static_cast<const float*>(bytes);
  for (int i = 0; i < n; ++i) EXPECT_EQ(values[i], float(i)) << "element " << i;
}

TEST(SyncedMemoryLayoutTest, RawAccessorsKeepTheLayout) {
  SyncedMemory memory(6 * sizeof(float));
  const auto layout = WriteReversed(memory, 6);
  EXPECT_EQ(memory.cpu_layout().get(), layout.get());
  EXPECT_EQ(memory.head(), SyncedMemory::Head::kHost);
  const float* raw = static_cast<const float*>(memory.raw_cpu_data());
  EXPECT_EQ(raw[0], 5.f);
  EXPECT_EQ(memory.cpu_layout().get(), layout.get());
  EXPECT_EQ(layout->conversions, 0);
}

TEST(SyncedMemoryLayoutTest, CpuDataConvertsOnce) {
  SyncedMemory memory(6 * sizeof(float));
  const auto layout = WriteReversed(memory, 6);
  const std::uint64_t writes = memory.write_count();
  ExpectCanonical(memory.cpu_data(), 6);
  EXPECT_EQ(memory.cpu_layout(), nullptr);
  // The conversion keeps the contents: no write to count.
  EXPECT_EQ(memory.write_count(), writes);
  ExpectCanonical(memory.cpu_data(), 6);
  ExpectCanonical(memory.raw_cpu_data(), 6);
  EXPECT_EQ(layout->conversions, 1);
}

TEST(SyncedMemoryLayoutTest, MutableCpuDataConvertsAndCounts) {
  SyncedMemory memory(4 * sizeof(float));
  const std::uint64_t before = memory.write_count();
  const auto layout = WriteReversed(memory, 4);
  EXPECT_EQ(memory.write_count(), before + 1);
  ExpectCanonical(memory.mutable_cpu_data(), 4);
  EXPECT_EQ(memory.write_count(), before + 2);
  EXPECT_EQ(memory.cpu_layout(), nullptr);
  EXPECT_EQ(layout->conversions, 1);
}

TEST(SyncedMemoryLayoutTest, RawWriteDoesNotConvertTheOldBytes) {
  SyncedMemory memory(4 * sizeof(float));
  const auto first = WriteReversed(memory, 4);
  // Overwritten whole in Caffe's layout: the old bytes are not converted first.
  float* bytes = static_cast<float*>(memory.mutable_raw_cpu_data(nullptr));
  EXPECT_EQ(bytes[0], 3.f);
  for (int i = 0; i < 4; ++i) bytes[i] = float(i);
  EXPECT_EQ(first->conversions, 0);
  EXPECT_EQ(memory.cpu_layout(), nullptr);
  ExpectCanonical(memory.cpu_data(), 4);
}

TEST(SyncedMemoryLayoutTest, ViewsRefuseALayout) {
  auto arena = std::make_shared<SyncedMemory>(8 * sizeof(float));
  SyncedMemory view(arena, 2 * sizeof(float), 4 * sizeof(float));
  EXPECT_THROW(view.mutable_raw_cpu_data(std::make_shared<Reversed>()), Error);
  EXPECT_EQ(view.cpu_layout(), nullptr);
  EXPECT_EQ(arena->cpu_layout(), nullptr);
  // Without a layout a view's raw accessors are its ordinary ones.
  float* bytes = static_cast<float*>(view.mutable_raw_cpu_data(nullptr));
  EXPECT_EQ(bytes, static_cast<float*>(arena->mutable_cpu_data()) + 2);
  EXPECT_EQ(view.raw_cpu_data(), view.cpu_data());
}

TEST(SyncedMemoryLayoutTest, BlobAccessorsSeeTheCanonicalLayout) {
  Blob<float> blob({2, 3});
  WriteReversed(*blob.data(), 6);
  Blob<float> copy({2, 3});
  copy.CopyFrom(blob);
  ExpectCanonical(copy.cpu_data(), 6);

  WriteReversed(*blob.data(), 6);
  EXPECT_EQ(blob.data_at(0, 1, 0, 0), 1.f);
  WriteReversed(*blob.data(), 6);
  EXPECT_FLOAT_EQ(blob.asum_data(), 15.f);
  WriteReversed(*blob.data(), 6);
  BlobProto proto;
  blob.ToProto(&proto);
  ASSERT_EQ(proto.data_size(), 6);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(proto.data(i), float(i));

  // The diff too; data -= diff reads both.
  WriteReversed(*blob.data(), 6);
  WriteReversed(*blob.diff(), 6);
  blob.Update();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(blob.cpu_data()[i], 0.f);
  WriteReversed(*blob.diff(), 6);
  ExpectCanonical(blob.mutable_cpu_diff(), 6);
}

}  // namespace
}  // namespace doppio
