// The Data layer in GPU mode: the prefetch thread uploads batches through pinned memory on a
// stream of its own, and Forward copies them on the device; the tops must be the CPU's.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "../data/data_test_helpers.hpp"
#include "doppio/core/net.hpp"
#include "doppio/util/io.hpp"
#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

template <typename Dtype>
std::unique_ptr<Net<Dtype>> DataNet(const std::string& source) {
  const std::string text =
      "name: 'n' state { phase: TRAIN } layer { name: 'data' type: 'Data' top: 'data' "
      "top: 'label' transform_param { scale: 0.5 mirror: true } data_param { source: '" +
      source + "' backend: LMDB batch_size: 4 prefetch: 2 } }";
  return std::make_unique<Net<Dtype>>(ReadNetParamsFromTextString(text, "test"), 1701);
}

template <typename Dtype>
class DataLayerGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { DOPPIO_REQUIRE_GPU(); }
  TempDir dir_;
};
TYPED_TEST_SUITE(DataLayerGpuTest, TestDtypes);

TYPED_TEST(DataLayerGpuTest, UploadedBatchesAreTheCpuBatches) {
  const std::string source = this->dir_.path() + "/db";
  testing_data::WriteDatumLmdb(source, testing_data::IndexedDatums(10));
  auto cpu = DataNet<TypeParam>(source);
  auto gpu = DataNet<TypeParam>(source);
  gpu->SetGpu(TestGpu());
  int on_device = 0;
  // More batches than the prefetch ring holds, so every slot is refilled while the compute
  // stream may still be reading its previous contents.
  for (int k = 0; k < 12; ++k) {
    SCOPED_TRACE("batch " + std::to_string(k));
    cpu->Forward();
    gpu->Forward();
    const auto& data = gpu->blob_by_name("data");
    const auto& label = gpu->blob_by_name("label");
    if (data->data()->head() == SyncedMemory::Head::kDevice) ++on_device;
    ExpectBlobsClose(*cpu->blob_by_name("data"), *data, false, 0, "data");
    ExpectBlobsClose(*cpu->blob_by_name("label"), *label, false, 0, "label");
  }
  // The batches prefetched before the first GPU Forward go through host memory.
  EXPECT_GE(on_device, 8);
}

}  // namespace
}  // namespace doppio
