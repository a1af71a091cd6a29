// The Data layer in GPU mode: the prefetch thread uploads batches through pinned memory on a
// stream of its own, and Forward copies them on the device; the tops must be the CPU's. And
// data_param.decode: GPU, nvJPEG and the device transform, against the CPU's decode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../data/data_test_helpers.hpp"
#include "../data/jpeg_test_images.hpp"
#include "doppio/core/net.hpp"
#include "doppio/device/nvjpeg_decoder.hpp"
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

#ifdef DOPPIO_WITH_NVJPEG
// Photograph-like JPEGs of several sizes, every fifth gray, record i labelled i.
std::vector<std::string> JpegRecords(int n) {
  std::vector<std::string> values;
  for (int i = 0; i < n; ++i) {
    Datum datum;
    const std::string bytes = testing_jpeg::EncodeJpeg(testing_jpeg::PhotoLike(
        48 + 7 * (i % 3), 64 - 5 * (i % 4), i % 5 == 4 ? 1 : 3, static_cast<unsigned>(i)));
    datum.set_data(bytes);
    datum.set_encoded(true);
    datum.set_label(i);
    values.push_back(datum.SerializeAsString());
  }
  return values;
}

TYPED_TEST(DataLayerGpuTest, NvjpegBatchesAreTheCpuBatchesWithinDecodeTolerance) {
  try {
    NvjpegDecoder probe(*TestGpu());
  } catch (const Error& error) {
    GTEST_SKIP() << error.what();
  }
  const std::string source = this->dir_.path() + "/jpegs";
  testing_data::WriteLmdb(source, JpegRecords(10));
  // The same windows and mirrors (the draws are the CPU's), pixels within a decoder's
  // rounding: nvJPEG's inverse DCT and chroma upsampling are not libjpeg-turbo's.
  for (const std::string transform :
       {"force_color: true crop_size: 40 mirror: true scale: 0.5 mean_value: 104 "
        "mean_value: 117 mean_value: 123",
        "force_color: true resized_crop_size: 24 mirror: true jpeg_dct_scaling: false "
        "mean_value: 110",
        "force_gray: true resized_crop_size: 32 mirror: true jpeg_dct_scaling: false"}) {
    SCOPED_TRACE(transform);
    auto net = [&](const std::string& decode) {
      const std::string text =
          "name: 'n' state { phase: TRAIN } layer { name: 'data' type: 'Data' top: 'data' "
          "top: 'label' transform_param { " +
          transform + " } data_param { source: '" + source +
          "' backend: LMDB batch_size: 5 prefetch: 2 decode: " + decode + " } }";
      return std::make_unique<Net<TypeParam>>(ReadNetParamsFromTextString(text, "test"), 1701);
    };
    auto cpu = net("CPU");
    auto gpu = net("GPU");
    gpu->SetGpu(TestGpu());
    const double scale = transform.find("scale: 0.5") != std::string::npos ? 0.5 : 1.0;
    for (int k = 0; k < 6; ++k) {
      SCOPED_TRACE("batch " + std::to_string(k));
      cpu->Forward();
      gpu->Forward();
      const Blob<TypeParam>& expected = *cpu->blob_by_name("data");
      const Blob<TypeParam>& actual = *gpu->blob_by_name("data");
      ASSERT_EQ(expected.shape(), actual.shape());
      double sum = 0, worst = 0;
      for (int i = 0; i < expected.count(); ++i) {
        const double diff = std::abs(expected.cpu_data()[i] - actual.cpu_data()[i]) / scale;
        sum += diff;
        worst = std::max(worst, diff);
      }
      // In 8-bit levels: a mirrored or shifted window would be off by tens on average.
      EXPECT_LT(sum / expected.count(), 2.0);
      EXPECT_LT(worst, 40.0);
      ExpectBlobsClose(*cpu->blob_by_name("label"), *gpu->blob_by_name("label"), false, 0, "label");
    }
  }
}
#endif  // DOPPIO_WITH_NVJPEG

}  // namespace
}  // namespace doppio
