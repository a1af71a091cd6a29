// The WindowData layer in GPU mode: its batches are warped on the host and uploaded as the
// other prefetching data layers' are, so the device sees the CPU's batches.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "doppio/core/net.hpp"
#include "doppio/util/io.hpp"
#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

template <typename Dtype>
class WindowDataLayerGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DOPPIO_REQUIRE_GPU();
    // A 16 x 12 gradient, one foreground and one background window.
    cv::Mat image(12, 16, CV_8UC3);
    for (int h = 0; h < 12; ++h) {
      for (int w = 0; w < 16; ++w) image.at<cv::Vec3b>(h, w) = cv::Vec3b(10 * w, 20 * h, 7);
    }
    ASSERT_TRUE(cv::imwrite(dir_.path() + "/img.png", image));
    std::ofstream(dir_.path() + "/windows.txt")
        << "# 0\n"
        << dir_.path() << "/img.png\n3 12 16\n2\n1 0.9 2 3 9 10\n0 0.1 0 0 15 5\n";
  }
  std::unique_ptr<Net<Dtype>> MakeNet() {
    const std::string text =
        "name: 'n' state { phase: TRAIN } layer { name: 'w' type: 'WindowData' top: 'data' "
        "top: 'label' transform_param { crop_size: 5 mirror: true mean_value: 3 } "
        "window_data_param { source: '" +
        dir_.path() + "/windows.txt' batch_size: 4 fg_fraction: 0.5 context_pad: 1 } }";
    return std::make_unique<Net<Dtype>>(ReadNetParamsFromTextString(text, "test"), 1701);
  }
  TempDir dir_;
};
TYPED_TEST_SUITE(WindowDataLayerGpuTest, TestDtypes);

TYPED_TEST(WindowDataLayerGpuTest, DeviceBatchesAreTheCpuBatches) {
  auto cpu = this->MakeNet();
  auto gpu = this->MakeNet();
  gpu->SetGpu(TestGpu());
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE("batch " + std::to_string(k));
    cpu->Forward();
    gpu->Forward();
    for (const char* blob : {"data", "label"}) {
      const auto& on_gpu = *gpu->blob_by_name(blob);
      // Read on the device, as the next layer would.
      on_gpu.gpu_data(*TestGpu());
      ExpectBlobsClose(*cpu->blob_by_name(blob), on_gpu, false, 0, blob);
    }
  }
}

}  // namespace
}  // namespace doppio
