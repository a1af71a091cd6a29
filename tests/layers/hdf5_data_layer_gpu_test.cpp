// The HDF5Data layer in GPU mode: it fills its tops on the host, as Caffe's copies rows, and
// the device sees the CPU's batches; HDF5Output reads its bottoms back from the device.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "doppio/core/net.hpp"
#include "doppio/util/hdf5.hpp"
#include "doppio/util/io.hpp"
#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

template <typename Dtype>
class Hdf5DataLayerGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DOPPIO_REQUIRE_GPU();
    // Two files of 5 and 4 samples of 2 x 3 values; labels are the sample numbers.
    std::ofstream list(dir_.path() + "/list.txt");
    int first = 0;
    for (int rows : {5, 4}) {
      std::vector<float> data, label;
      for (int s = first; s < first + rows; ++s) {
        for (int k = 0; k < 6; ++k) data.push_back(0.5f * s - 0.25f * k);
        label.push_back(static_cast<float>(s));
      }
      Hdf5Writer file;
      file.Write("data", {rows, 2, 3}, data.data());
      file.Write("label", {rows}, label.data());
      const std::string path = dir_.path() + "/f" + std::to_string(first) + ".h5";
      WriteFileAtomically(file.Image(), path);
      list << path << "\n";
      first += rows;
    }
  }
  std::unique_ptr<Net<Dtype>> MakeNet(const std::string& output) {
    const std::string text =
        "name: 'n' state { phase: TRAIN } layer { name: 'h5' type: 'HDF5Data' top: 'data' "
        "top: 'label' hdf5_data_param { source: '" +
        dir_.path() + "/list.txt' batch_size: 4 shuffle: true } } " +
        "layer { name: 'save' type: 'HDF5Output' bottom: 'data' bottom: 'label' "
        "hdf5_output_param { file_name: '" +
        output + "' } }";
    return std::make_unique<Net<Dtype>>(ReadNetParamsFromTextString(text, "test"), 1701);
  }
  TempDir dir_;
};
TYPED_TEST_SUITE(Hdf5DataLayerGpuTest, TestDtypes);

TYPED_TEST(Hdf5DataLayerGpuTest, DeviceBatchesAreTheCpuBatches) {
  auto cpu = this->MakeNet(this->dir_.path() + "/cpu_out.h5");
  auto gpu = this->MakeNet(this->dir_.path() + "/gpu_out.h5");
  gpu->SetGpu(TestGpu());
  for (int k = 0; k < 5; ++k) {
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
  cpu.reset();
  gpu.reset();
  Hdf5Reader cpu_out(this->dir_.path() + "/cpu_out.h5");
  Hdf5Reader gpu_out(this->dir_.path() + "/gpu_out.h5");
  for (const char* dataset : {"data", "label"}) {
    EXPECT_EQ(gpu_out.Shape(dataset), cpu_out.Shape(dataset));
    EXPECT_EQ(gpu_out.Read<TypeParam>(dataset), cpu_out.Read<TypeParam>(dataset));
  }
}

}  // namespace
}  // namespace doppio
