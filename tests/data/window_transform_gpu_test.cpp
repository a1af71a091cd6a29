// The device transform of data_param.decode: GPU (device/window_transform_gpu.hpp) against
// DataTransformer on the same 8-bit pixels: crops, random-resized crops (shrinking and
// growing), mirrors, mean values and scale. Skipped without a device; runs under the CUDA
// emulation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "doppio/data/data_transformer.hpp"
#include "doppio/device/gpu_util.hpp"
#include "doppio/device/window_transform_gpu.hpp"
#include "gpu_test_util.hpp"
#include "jpeg_test_images.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

template <typename Dtype>
class WindowTransformGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { DOPPIO_REQUIRE_GPU(); }
};
TYPED_TEST_SUITE(WindowTransformGpuTest, TestDtypes);

TYPED_TEST(WindowTransformGpuTest, MatchesTheCpuTransformOfTheSamePixels) {
  using Dtype = TypeParam;
  TestGpu()->MakeCurrent();
  const cv::Mat image = testing_jpeg::PhotoLike(37, 45, 3, 7);
  const std::size_t image_bytes = image.total() * image.elemSize();
  std::uint8_t* pixels = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&pixels), image_bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(pixels, image.data, image_bytes, cudaMemcpyHostToDevice), cudaSuccess);
  constexpr int kRecords = 8;
  for (const std::string text :
       {"crop_size: 20 mirror: true scale: 0.5 mean_value: 100 mean_value: 110 mean_value: 120",
        "resized_crop_size: 16 mirror: true mean_value: 90",
        "resized_crop_size: 50 mirror: true resized_crop_scale_min: 0.5 scale: 0.25"}) {
    SCOPED_TRACE(text);
    const auto param = ParseText<TransformationParameter>(text);
    DataTransformer<Dtype> transformer(param, TRAIN, "test");
    transformer.set_seed(11);
    const std::vector<int> shape = transformer.InferShape(image, "the image");
    const std::size_t count = static_cast<std::size_t>(shape[0]) * shape[1] * shape[2];
    std::vector<Dtype> expected(count * kRecords);
    std::vector<GpuWindowJob> jobs(kRecords);
    for (int i = 0; i < kRecords; ++i) {
      const auto draw = transformer.DrawFor(static_cast<std::uint64_t>(i));
      transformer.Transform(image, draw, expected.data() + count * i, "the image");
      const cv::Rect window =
          transformer.CheckedWindow(3, image.rows, image.cols, draw, "the image", &shape);
      jobs[i] = {pixels,
                 static_cast<long long>(image.step[0]),
                 image.rows,
                 image.cols,
                 window.x,
                 window.y,
                 window.width,
                 window.height,
                 transformer.Mirrors(draw)};
    }
    const GpuWindowTransform transform = GpuWindowTransformFor(param, shape);
    GpuWindowJob* device_jobs = nullptr;
    Dtype* out = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&device_jobs), sizeof(GpuWindowJob) * kRecords),
              cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&out), sizeof(Dtype) * expected.size()),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpy(device_jobs, jobs.data(), sizeof(GpuWindowJob) * kRecords,
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    gpu_transform_windows(transform, device_jobs, kRecords, out, nullptr);
    std::vector<Dtype> actual(expected.size());
    ASSERT_EQ(cudaMemcpy(actual.data(), out, sizeof(Dtype) * actual.size(), cudaMemcpyDeviceToHost),
              cudaSuccess);
    cudaFree(out);
    cudaFree(device_jobs);
    // A fused multiply-add on the device may round the bilinear blend differently.
    for (std::size_t k = 0; k < expected.size(); ++k) {
      ASSERT_NEAR(actual[k], expected[k], 1e-3 * std::max<double>(1, std::abs(expected[k])))
          << "value " << k << " of record " << k / count;
    }
  }
  cudaFree(pixels);
}

}  // namespace
}  // namespace doppio
