#include "doppio/core/blob.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class BlobTest : public ::testing::Test {};
TYPED_TEST_SUITE(BlobTest, TestDtypes);

TYPED_TEST(BlobTest, ShapesAndLegacyAccessors) {
  Blob<TypeParam> blob({2, 3, 4, 5});
  EXPECT_EQ(blob.count(), 120);
  EXPECT_EQ(blob.num(), 2);
  EXPECT_EQ(blob.channels(), 3);
  EXPECT_EQ(blob.height(), 4);
  EXPECT_EQ(blob.width(), 5);
  EXPECT_EQ(blob.shape(-1), 5);
  EXPECT_EQ(blob.count(1), 60);
  EXPECT_EQ(blob.count(1, 3), 12);
  EXPECT_EQ(blob.offset(1, 2, 3, 4), 119);
  Blob<TypeParam> flat({7});
  EXPECT_EQ(flat.num(), 7);
  EXPECT_EQ(flat.channels(), 1);
  Blob<TypeParam> big({1, 1, 1, 1, 6});
  EXPECT_THROW(big.num(), Error);
}

TYPED_TEST(BlobTest, RejectsNegativeDimensionsAndBadAxes) {
  Blob<TypeParam> blob;
  EXPECT_THROW(blob.Reshape({2, -1}), Error);
  blob.Reshape({2, 3});
  EXPECT_THROW(blob.CanonicalAxisIndex(2), Error);
  EXPECT_EQ(blob.CanonicalAxisIndex(-2), 0);
}

TYPED_TEST(BlobTest, ZeroDimensionGivesEmptyBlob) {
  Blob<TypeParam> blob({0, 3});
  EXPECT_EQ(blob.count(), 0);
}

TYPED_TEST(BlobTest, UpdateSubtractsDiff) {
  Blob<TypeParam> blob({3});
  TypeParam* data = blob.mutable_cpu_data();
  TypeParam* diff = blob.mutable_cpu_diff();
  for (int i = 0; i < 3; ++i) {
    data[i] = i;
    diff[i] = 0.5;
  }
  blob.Update();
  EXPECT_EQ(blob.cpu_data()[2], TypeParam(1.5));
  EXPECT_EQ(blob.asum_diff(), TypeParam(1.5));
  EXPECT_EQ(blob.sumsq_diff(), TypeParam(0.75));
}

TYPED_TEST(BlobTest, ProtoRoundTripAndLegacyShape) {
  Blob<TypeParam> blob({2, 3});
  for (int i = 0; i < 6; ++i) blob.mutable_cpu_data()[i] = i * 0.25;
  BlobProto proto;
  blob.ToProto(&proto);
  Blob<TypeParam> back;
  back.FromProto(proto);
  EXPECT_EQ(back.shape(), blob.shape());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(back.cpu_data()[i], blob.cpu_data()[i]);

  BlobProto legacy;
  legacy.set_num(1);
  legacy.set_channels(2);
  legacy.set_height(1);
  legacy.set_width(3);
  for (int i = 0; i < 6; ++i) legacy.add_data(i);
  Blob<TypeParam> from_legacy;
  from_legacy.FromProto(legacy);
  EXPECT_EQ(from_legacy.shape(), (std::vector<int>{1, 2, 1, 3}));
  Blob<TypeParam> wrong({5});
  EXPECT_THROW(wrong.FromProto(legacy, false), Error);
}

TYPED_TEST(BlobTest, ArenaViewSharesStorage) {
  auto arena = std::make_shared<SyncedMemory>(10 * sizeof(TypeParam));
  Blob<TypeParam> a({4});
  Blob<TypeParam> b({6});
  a.SetDataMemory(std::make_shared<SyncedMemory>(arena, 0, 4 * sizeof(TypeParam)));
  b.SetDataMemory(
      std::make_shared<SyncedMemory>(arena, 4 * sizeof(TypeParam), 6 * sizeof(TypeParam)));
  a.mutable_cpu_data()[3] = 7;
  b.mutable_cpu_data()[0] = 9;
  const auto* all = static_cast<const TypeParam*>(arena->cpu_data());
  EXPECT_EQ(all[3], TypeParam(7));
  EXPECT_EQ(all[4], TypeParam(9));
}

// Host memory that cannot be had is an Error (the fuzz targets run with allocations over
// 2 GiB failing, so a huge blob asked for by a prototxt lands here).
TEST(SyncedMemoryTest, AllocationThatFailsIsAnError) {
  SyncedMemory memory(std::size_t(1) << 62);
  ExpectError([&] { memory.mutable_cpu_data(); }, {"cannot allocate", "bytes of host memory"});
}

}  // namespace doppio
