// MAX pooling's NaN rule on the GPU is the CPU's (PyTorch's): a window holding NaN outputs NaN
// and routes its gradient to the window's last NaN. Under either engine the GPU runs Doppio's
// own MAX kernel (CudnnPoolingLayer delegates MAX); AVE under cuDNN propagates NaN by its
// descriptor, which only a machine with cuDNN runs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/rng.hpp"
#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

template <typename Dtype>
class PoolingLayerGpuTest : public ::testing::Test {};
TYPED_TEST_SUITE(PoolingLayerGpuTest, TestDtypes);

// Equal, NaN matching NaN.
template <typename Dtype>
void ExpectSame(const Dtype* cpu, const Dtype* gpu, int count, const std::string& what) {
  for (int i = 0; i < count; ++i) {
    if (std::isnan(cpu[i])) {
      EXPECT_TRUE(std::isnan(gpu[i])) << what << " element " << i << ": GPU " << gpu[i];
    } else {
      EXPECT_EQ(cpu[i], gpu[i]) << what << " element " << i;
    }
  }
}

TYPED_TEST(PoolingLayerGpuTest, MaxPropagatesNaNAsTheCpuDoes) {
  DOPPIO_REQUIRE_GPU();
  using Dtype = TypeParam;
  const Dtype nan = std::numeric_limits<Dtype>::quiet_NaN();
  for (const char* shape : {"kernel_size: 2 stride: 1", "kernel_size: 3 stride: 2 pad: 1",
                            "kernel_size: 2 stride: 3"}) {
    // The default engine (cuDNN where the build has it) and CAFFE.
    for (const std::string engine : {"", "engine: CAFFE"}) {
      for (int tops : {1, 2}) {
        SCOPED_TRACE(std::string(shape) + " " + engine + " tops " + std::to_string(tops));
        LayerParameter param = ParseText<LayerParameter>(
            "name: 'pool' type: 'Pooling' bottom: 'in' top: 'out' pooling_param { pool: MAX " +
            engine + " " + shape + " }");
        if (tops == 2) param.add_top("mask");
        Blob<Dtype> cpu_bottom({2, 2, 6, 11}), gpu_bottom, cpu_top, gpu_top, cpu_mask, gpu_mask;
        Rng rng(7);
        rng_gaussian<Dtype>(cpu_bottom.count(), Dtype(0), Dtype(1), rng,
                            cpu_bottom.mutable_cpu_data());
        Dtype* in = cpu_bottom.mutable_cpu_data();
        for (int index : {12, 13, 50, 65 + 10, 200}) in[index] = nan;
        in[100] = std::numeric_limits<Dtype>::infinity();
        gpu_bottom.ReshapeLike(cpu_bottom);
        gpu_bottom.CopyFrom(cpu_bottom);

        auto cpu_layer = LayerRegistry<Dtype>::CreateLayer(param, Mode::CPU);
        auto gpu_layer = LayerRegistry<Dtype>::CreateLayer(param, Mode::GPU);
        gpu_layer->SetGpu(TestGpu());
        std::vector<Blob<Dtype>*> cb = {&cpu_bottom}, gb = {&gpu_bottom};
        std::vector<Blob<Dtype>*> ct = {&cpu_top}, gt = {&gpu_top};
        if (tops == 2) {
          ct.push_back(&cpu_mask);
          gt.push_back(&gpu_mask);
        }
        cpu_layer->SetUp(cb, ct);
        gpu_layer->SetUp(gb, gt);
        cpu_layer->Forward(cb, ct);
        gpu_layer->Forward(gb, gt);
        int nan_outputs = 0;
        for (int i = 0; i < cpu_top.count(); ++i) nan_outputs += std::isnan(cpu_top.cpu_data()[i]);
        EXPECT_GE(nan_outputs, 3);
        ExpectSame(cpu_top.cpu_data(), gpu_top.cpu_data(), cpu_top.count(), "top");
        if (tops == 2)
          ExpectSame(cpu_mask.cpu_data(), gpu_mask.cpu_data(), cpu_mask.count(), "mask");

        for (int i = 0; i < cpu_top.count(); ++i) cpu_top.mutable_cpu_diff()[i] = Dtype(i % 7 + 1);
        gpu_top.CopyFrom(cpu_top, true);
        cpu_layer->Backward(ct, {true}, cb);
        gpu_layer->Backward(gt, {true}, gb);
        ExpectSame(cpu_bottom.cpu_diff(), gpu_bottom.cpu_diff(), cpu_bottom.count(), "bottom diff");
        // The gradient reaches the NaNs.
        EXPECT_NE(cpu_bottom.cpu_diff()[12], Dtype(0));
      }
    }
  }
}

}  // namespace
}  // namespace doppio
