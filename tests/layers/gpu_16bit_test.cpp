// 16-bit activations on the GPU (BF16 and FP16, docs/precision.md): the storage a buffer's
// device bytes carry and its widening for every other reader, the reader that converts once
// per write, the 16-bit GEMM, and each layer with 16-bit kernels against its fp32 CPU twin
// within the type's tolerance; then a net and a solver trained in both types against fp32.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "doppio/core/gpu_storage.hpp"
#include "doppio/core/layer_registry.hpp"
#include "doppio/core/net.hpp"
#include "doppio/device/gpu_half.hpp"
#include "doppio/device/gpu_util.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/half.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/rng.hpp"
#include "expect_error.hpp"
#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

struct Type16 {
  Precision precision;
  GpuStorage storage;
  // Relative to max(1, |x|): a few roundings of the type's unit (bf16 2^-8, fp16 2^-11).
  double tolerance;
};
const Type16 kTypes[] = {{BF16, GpuStorage::kBfloat16, 3e-2}, {FP16, GpuStorage::kFloat16, 4e-3}};

float Rounded(float value, GpuStorage storage) {
  return storage == GpuStorage::kFloat16 ? HalfToFloat(FloatToHalf(value))
                                         : Bfloat16ToFloat(FloatToBfloat16(value));
}

TEST(Gpu16BitTest, SixteenBitBytesWidenForEveryOtherReader) {
  DOPPIO_REQUIRE_GPU();
  GpuContext& gpu = *TestGpu();
  for (const Type16& type : kTypes) {
    const int n = 37;
    std::vector<float> values(n), device_values(n);
    for (int i = 0; i < n; ++i) values[i] = std::sin(0.7f * i) * 300.f;
    auto memory = std::make_shared<SyncedMemory>(n * sizeof(float));
    std::vector<std::uint16_t> bits(n);
    for (int i = 0; i < n; ++i) {
      bits[i] = type.storage == GpuStorage::kFloat16 ? FloatToHalf(values[i])
                                                     : FloatToBfloat16(values[i]);
    }
    void* raw = memory->mutable_raw_gpu_data(gpu, type.storage);
    DOPPIO_CUDA_CHECK(cudaMemcpy(raw, bits.data(), n * 2, cudaMemcpyHostToDevice));
    EXPECT_EQ(memory->gpu_storage(), type.storage);
    // The device reader first: widened in place on the device.
    const void* canonical = memory->gpu_data(gpu);
    EXPECT_EQ(memory->gpu_storage(), GpuStorage::kFloat32);
    gpu.Synchronize();
    DOPPIO_CUDA_CHECK(cudaMemcpy(device_values.data(), canonical, n * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) EXPECT_EQ(device_values[i], Rounded(values[i], type.storage)) << i;
    // And the host reader, from 16-bit bytes again.
    DOPPIO_CUDA_CHECK(cudaMemcpy(memory->mutable_raw_gpu_data(gpu, type.storage), bits.data(),
                                 n * 2, cudaMemcpyHostToDevice));
    const auto* host = static_cast<const float*>(memory->cpu_data());
    for (int i = 0; i < n; ++i) EXPECT_EQ(host[i], Rounded(values[i], type.storage)) << i;
  }
  // A buffer only ever written in 16 bits holds half its size on the device.
  const std::size_t floats = 1 << 16;
  const std::size_t before = gpu.allocator().bytes_in_use();
  auto narrow = std::make_shared<SyncedMemory>(floats * sizeof(float));
  narrow->mutable_raw_gpu_data(gpu, GpuStorage::kBfloat16);
  EXPECT_EQ(gpu.allocator().bytes_in_use() - before, DeviceAllocator::BucketSize(floats * 2));
  narrow->gpu_data(gpu);
  EXPECT_EQ(gpu.allocator().bytes_in_use() - before, DeviceAllocator::BucketSize(floats * 4));
  // A view of a buffer whose views are used one at a time (the net's shared activations and
  // gradients) holds 16 bits through it; widened through the view, as any other.
  auto slot = std::make_shared<SyncedMemory>(64 * sizeof(float));
  slot->ShareViewsOneAtATime();
  auto shared = std::make_shared<SyncedMemory>(slot, 0, 40 * sizeof(float));
  const std::uint16_t one = FloatToBfloat16(1.5f);
  std::vector<std::uint16_t> ones(40, one);
  DOPPIO_CUDA_CHECK(cudaMemcpy(shared->mutable_raw_gpu_data(gpu, GpuStorage::kBfloat16),
                               ones.data(), 80, cudaMemcpyHostToDevice));
  EXPECT_EQ(shared->gpu_storage(), GpuStorage::kBfloat16);
  EXPECT_EQ(slot->gpu_storage(), GpuStorage::kBfloat16);
  const auto* widened = static_cast<const float*>(shared->cpu_data());
  for (int i = 0; i < 40; ++i) EXPECT_EQ(widened[i], 1.5f) << i;
  EXPECT_EQ(slot->gpu_storage(), GpuStorage::kFloat32);
  // The parameter arena stays fp32.
  auto arena = std::make_shared<SyncedMemory>(64);
  SyncedMemory view(arena, 16, 16);
  EXPECT_ERROR_WITH(view.mutable_raw_gpu_data(gpu, GpuStorage::kBfloat16), "arena", "bf16");
}

TEST(Gpu16BitTest, TheReaderConvertsOncePerWriteAndPassesSixteenBitsThrough) {
  DOPPIO_REQUIRE_GPU();
  GpuContext& gpu = *TestGpu();
  auto memory = std::make_shared<SyncedMemory>(8 * sizeof(float));
  auto* host = static_cast<float*>(memory->mutable_cpu_data());
  for (int i = 0; i < 8; ++i) host[i] = 1.f + i / 3.f;
  GpuStorageReader reader;
  const void* first = reader.Read(memory, GpuStorage::kBfloat16, gpu);
  EXPECT_EQ(reader.Read(memory, GpuStorage::kBfloat16, gpu), first);
  gpu.Synchronize();
  std::vector<std::uint16_t> bits(8);
  DOPPIO_CUDA_CHECK(cudaMemcpy(bits.data(), first, 16, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(bits[i], FloatToBfloat16(1.f + i / 3.f)) << i;
  // A write makes the copy stale.
  static_cast<float*>(memory->mutable_cpu_data())[0] = -2.f;
  const void* again = reader.Read(memory, GpuStorage::kBfloat16, gpu);
  gpu.Synchronize();
  DOPPIO_CUDA_CHECK(cudaMemcpy(bits.data(), again, 2, cudaMemcpyDeviceToHost));
  EXPECT_EQ(Bfloat16ToFloat(bits[0]), -2.f);
  // Bytes that already hold the storage are read where they are.
  const void* own = memory->mutable_raw_gpu_data(gpu, GpuStorage::kBfloat16);
  EXPECT_EQ(reader.Read(memory, GpuStorage::kBfloat16, gpu), own);
}

TEST(Gpu16BitTest, TheSixteenBitGemmIsTheFp32ProductOfTheRoundedOperands) {
  DOPPIO_REQUIRE_GPU();
  GpuContext& gpu = *TestGpu();
  const int m = 5, n = 7, k = 9;
  for (const Type16& type : kTypes) {
    for (Trans trans_b : {Trans::kNo, Trans::kYes}) {
      Blob<float> a({m, k}), b({k, n}), c({m, n}), expected({m, n});
      Rng rng(11);
      rng_gaussian<float>(a.count(), 0.f, 1.f, rng, a.mutable_cpu_data());
      rng_gaussian<float>(b.count(), 0.f, 1.f, rng, b.mutable_cpu_data());
      rng_gaussian<float>(c.count(), 0.f, 1.f, rng, c.mutable_cpu_data());
      std::vector<float> ra(a.count()), rb(b.count());
      for (int i = 0; i < a.count(); ++i) ra[i] = Rounded(a.cpu_data()[i], type.storage);
      for (int i = 0; i < b.count(); ++i) rb[i] = Rounded(b.cpu_data()[i], type.storage);
      expected.CopyFrom(c);
      cpu_gemm<float>(Trans::kNo, trans_b, m, n, k, 2.f, ra.data(), rb.data(), 0.5f,
                      expected.mutable_cpu_data());
      GpuStorageReader read_a, read_b;
      // trans_b reads the same k x n values as an n x k matrix: only the shapes matter here.
      gpu_gemm_ex(gpu, Trans::kNo, trans_b, m, n, k, 2.f, type.storage,
                  read_a.Read(a.data(), type.storage, gpu),
                  read_b.Read(b.data(), type.storage, gpu), 0.5f, GpuStorage::kFloat32,
                  c.mutable_gpu_data(gpu));
      ExpectBlobsClose(expected, c, false, 1e-5, PrecisionName(type.precision));
    }
  }
}

// The layer in `text` on the CPU in fp32 and on the GPU asked for `type`, with bottoms of
// `shapes` and `tops` tops: forward and backward from the same inputs and top gradients agree
// to the type's tolerance, and the GPU layer's tops and bottom gradients are held in 16 bits.
void CompareWithCpu(const std::string& text, const std::vector<std::vector<int>>& shapes,
                    const Type16& type, int tops = 1) {
  SCOPED_TRACE(text + " " + PrecisionName(type.precision));
  const LayerParameter param = ParseText<LayerParameter>(text);
  std::vector<std::unique_ptr<Blob<float>>> blobs;
  const auto make = [&](const std::vector<int>& shape) {
    blobs.push_back(std::make_unique<Blob<float>>(shape));
    return blobs.back().get();
  };
  std::vector<Blob<float>*> cb, gb, ct, gt;
  Rng rng(5);
  for (const std::vector<int>& shape : shapes) {
    cb.push_back(make(shape));
    gb.push_back(make(shape));
    rng_gaussian<float>(cb.back()->count(), 0.f, 1.f, rng, cb.back()->mutable_cpu_data());
    gb.back()->CopyFrom(*cb.back());
  }
  for (int i = 0; i < tops; ++i) {
    ct.push_back(make({}));
    gt.push_back(make({}));
  }
  auto cpu_layer = LayerRegistry<float>::CreateLayer(param, Mode::CPU);
  auto gpu_layer = LayerRegistry<float>::CreateLayer(param, Mode::GPU);
  gpu_layer->set_precision_request(type.precision);
  gpu_layer->SetGpu(TestGpu());
  cpu_layer->SetUp(cb, ct);
  gpu_layer->SetUp(gb, gt);
  EXPECT_EQ(gpu_layer->precision().storage, type.precision);
  for (std::size_t i = 0; i < cpu_layer->blobs().size(); ++i) {
    gpu_layer->blobs()[i]->CopyFrom(*cpu_layer->blobs()[i]);
  }
  cpu_layer->Forward(cb, ct);
  gpu_layer->Forward(gb, gt);
  for (int i = 0; i < tops; ++i) {
    // A Split's tops share its bottom's data, as they do in fp32.
    if (param.type() != "Split") EXPECT_EQ(gt[i]->data()->gpu_storage(), type.storage);
    ExpectBlobsClose(*ct[i], *gt[i], false, type.tolerance, "top " + std::to_string(i));
    rng_gaussian<float>(ct[i]->count(), 0.f, 1.f, rng, ct[i]->mutable_cpu_diff());
    gt[i]->CopyFrom(*ct[i], true);
  }
  const std::vector<bool> down(shapes.size(), true);
  cpu_layer->Backward(ct, down, cb);
  gpu_layer->Backward(gt, down, gb);
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_EQ(gb[i]->diff()->gpu_storage(), type.storage);
    ExpectBlobsClose(*cb[i], *gb[i], true, type.tolerance, "bottom diff " + std::to_string(i));
  }
  for (std::size_t i = 0; i < cpu_layer->blobs().size(); ++i) {
    ExpectBlobsClose(*cpu_layer->blobs()[i], *gpu_layer->blobs()[i], true, type.tolerance * 4,
                     "parameter diff " + std::to_string(i));
  }
}

TEST(Gpu16BitTest, LayersWithSixteenBitKernelsMatchTheirFp32CpuTwin) {
  DOPPIO_REQUIRE_GPU();
  const std::vector<std::vector<int>> one = {{2, 3, 4, 5}}, two = {{2, 3, 4, 5}, {2, 3, 4, 5}};
  for (const Type16& type : kTypes) {
    CompareWithCpu("name: 'relu' type: 'ReLU' bottom: 'x' top: 'y'", one, type);
    CompareWithCpu("name: 'relu' type: 'ReLU' bottom: 'x' top: 'y' relu_param { engine: CAFFE }",
                   one, type);
    for (const char* pool : {"MAX", "AVE"}) {
      CompareWithCpu(std::string("name: 'pool' type: 'Pooling' bottom: 'x' top: 'y' "
                                 "pooling_param { kernel_size: 3 stride: 2 pad: 1 pool: ") +
                         pool + " }",
                     {{2, 3, 9, 7}}, type);
    }
    for (const char* transpose : {"false", "true"}) {
      CompareWithCpu(std::string("name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'y' "
                                 "inner_product_param { num_output: 6 transpose: ") +
                         transpose +
                         " weight_filler { type: 'gaussian' std: 0.3 } "
                         "bias_filler { type: 'constant' value: 0.2 } }",
                     {{4, 3, 2, 5}}, type);
    }
#ifdef DOPPIO_WITH_CUDNN
    // cuDNN's convolution, the GPU's default engine (the emulation has no cuDNN).
    CompareWithCpu(
        "name: 'conv' type: 'Convolution' bottom: 'x' top: 'y' convolution_param { "
        "num_output: 4 kernel_size: 3 pad: 1 stride: 2 "
        "weight_filler { type: 'gaussian' std: 0.3 } "
        "bias_filler { type: 'constant' value: 0.1 } }",
        {{2, 3, 9, 8}}, type);
    CompareWithCpu("name: 'lrn' type: 'LRN' bottom: 'x' top: 'y' lrn_param { local_size: 3 }",
                   {{2, 5, 4, 3}}, type);
    CompareWithCpu("name: 'bn' type: 'BatchNorm' bottom: 'x' top: 'y'", {{4, 3, 5, 2}}, type);
#endif
    CompareWithCpu(
        "name: 'drop' type: 'Dropout' bottom: 'x' top: 'y' dropout_param { "
        "dropout_ratio: 0.3 }",
        one, type);
    CompareWithCpu(
        "name: 'drop' type: 'Dropout' bottom: 'x' top: 'y' phase: TEST "
        "dropout_param { dropout_ratio: 0.3 scale_train: false }",
        one, type);
    for (int tops : {1, 2, 3}) {
      CompareWithCpu("name: 'split' type: 'Split' bottom: 'x' top: 'a' top: 'b' top: 'c'", one,
                     type, tops);
    }
    CompareWithCpu("name: 'cat' type: 'Concat' bottom: 'a' bottom: 'b' top: 'y'",
                   {{2, 3, 4, 5}, {2, 2, 4, 5}}, type);
    CompareWithCpu(
        "name: 'sum' type: 'Eltwise' bottom: 'a' bottom: 'b' top: 'y' eltwise_param { "
        "operation: SUM coeff: 1 coeff: -0.5 }",
        two, type);
  }
}

TEST(Gpu16BitTest, ALayerNamingAPrecisionItsGpuEngineLacksIsAnErrorNamingIt) {
  DOPPIO_REQUIRE_GPU();
  NetParameter param = ParseText<NetParameter>(
      "name: 'named' layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 "
      "dim: 3 dim: 6 dim: 6 } } } "
      "layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'c' precision: BF16 "
      "  convolution_param { num_output: 2 kernel_size: 3 engine: CAFFE } } "
      "layer { name: 'relu' type: 'ReLU' bottom: 'c' top: 'c' precision: BF16 } ");
  EXPECT_ERROR_WITH((Net<float>{param, 1, TestGpu()}), "'conv'", "bf16", "CAFFE");
  param.mutable_layer(1)->clear_precision();
  Net<float> net(param, 1, TestGpu());
  EXPECT_EQ(DescribePrecision(net.layer_by_name("relu")->precision()), "bf16");
  EXPECT_EQ(DescribePrecision(net.layer_by_name("conv")->precision()), "fp32");
}

// conv -> BatchNorm + Scale -> relu -> pool -> ip -> relu -> ip -> SoftmaxWithLoss (fp32):
// on the GPU all but the loss in 16 bits; under the emulation (no cuDNN) the convolution and
// the BatchNorm + Scale stay fp32, between 16-bit layers.
std::string SmallNet() {
  return "name: 'small' "
         "layer { name: 'data' type: 'Input' top: 'x' top: 'label' input_param { "
         "  shape { dim: 8 dim: 2 dim: 8 dim: 8 } shape { dim: 8 } } } "
         "layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'c' convolution_param { "
         "  num_output: 4 kernel_size: 3 weight_filler { type: 'gaussian' std: 0.2 } } } "
         "layer { name: 'bn' type: 'BatchNorm' bottom: 'c' top: 'c' } "
         "layer { name: 'scale' type: 'Scale' bottom: 'c' top: 'c' scale_param { "
         "  bias_term: true } } "
         "layer { name: 'relu1' type: 'ReLU' bottom: 'c' top: 'c' } "
         "layer { name: 'pool' type: 'Pooling' bottom: 'c' top: 'p' pooling_param { "
         "  pool: MAX kernel_size: 2 stride: 2 } } "
         "layer { name: 'ip1' type: 'InnerProduct' bottom: 'p' top: 'h' inner_product_param { "
         "  num_output: 10 weight_filler { type: 'gaussian' std: 0.2 } } } "
         "layer { name: 'relu2' type: 'ReLU' bottom: 'h' top: 'h' } "
         "layer { name: 'ip2' type: 'InnerProduct' bottom: 'h' top: 'o' inner_product_param { "
         "  num_output: 3 weight_filler { type: 'gaussian' std: 0.2 } } } "
         "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'o' bottom: 'label' top: 'l' } ";
}

// The solver's `precision` (FP16 scales the loss by default).
std::vector<float> TrainedLosses(const std::string& precision, std::vector<float>* weights) {
  SolverParameter param = ParseText<SolverParameter>(
      precision +
      " base_lr: 0.1 momentum: 0.9 lr_policy: 'fixed' max_iter: 30 display: 0 random_seed: 2 "
      "snapshot_after_train: false net_param { " +
      SmallNet() + " }");
  auto solver = SolverRegistry<float>::CreateSolver(param, TestGpu());
  Solver<float>* raw = solver.get();
  std::vector<float> losses;
  raw->add_callbacks(
      {[raw] {
         // The same batches whatever the precision: a function of the iteration.
         Net<float>& net = *raw->net();
         float* x = net.blob_by_name("x")->mutable_cpu_data();
         float* label = net.blob_by_name("label")->mutable_cpu_data();
         const int count = net.blob_by_name("x")->count();
         for (int i = 0; i < count; ++i) {
           // Sample n of class n % 3: a pattern per class, and some noise.
           const int per_sample = count / 8, j = i % per_sample;
           x[i] = std::sin(0.37f * j * (1 + (i / per_sample) % 3)) +
                  0.1f * std::sin(1.3f * raw->iter() + i);
         }
         for (int n = 0; n < 8; ++n) label[n] = static_cast<float>(n % 3);
       },
       [raw, &losses] { losses.push_back(raw->net()->blob_by_name("l")->cpu_data()[0]); }});
  solver->Solve();
  for (const Blob<float>* blob : solver->net()->learnable_params()) {
    weights->insert(weights->end(), blob->cpu_data(), blob->cpu_data() + blob->count());
  }
  return losses;
}

TEST(Gpu16BitTest, ANetTrainsInBf16AndFp16AsInFp32) {
  DOPPIO_REQUIRE_GPU();
  // The net's log names what each layer runs in.
  NetParameter net_param = ParseText<NetParameter>(SmallNet());
  net_param.set_precision(BF16);
  Net<float> net(net_param, 1, TestGpu());
  EXPECT_EQ(DescribePrecision(net.layer_by_name("ip1")->precision()), "bf16");
  EXPECT_EQ(DescribePrecision(net.layer_by_name("pool")->precision()), "bf16");
  EXPECT_EQ(DescribePrecision(net.layer_by_name("loss")->precision()), "fp32");
  std::vector<float> fp32_weights;
  const std::vector<float> fp32 = TrainedLosses("", &fp32_weights);
  ASSERT_GT(fp32.size(), 20u);
  EXPECT_LT(fp32.back(), 0.5f * fp32.front()) << "the fp32 run does not learn";
  for (const char* precision : {"precision: BF16", "precision: FP16"}) {
    SCOPED_TRACE(precision);
    std::vector<float> weights;
    const std::vector<float> losses = TrainedLosses(precision, &weights);
    ASSERT_EQ(losses.size(), fp32.size());
    for (std::size_t i = 0; i < losses.size(); ++i) {
      EXPECT_NEAR(losses[i], fp32[i], 0.05 * fp32[i] + 0.02) << "iteration " << i;
    }
    ASSERT_EQ(weights.size(), fp32_weights.size());
    for (float w : weights) EXPECT_TRUE(std::isfinite(w));
  }
}

TEST(Gpu16BitTest, AnFp16OverflowSkipsTheUpdateAndHalvesTheScale) {
  DOPPIO_REQUIRE_GPU();
  // A loss weighted so that its gradient, times the scale, is past fp16's 65504 where ip2
  // reads it in 16 bits: the gradients overflow to infinity.
  std::string text = SmallNet();
  const std::string loss = "top: 'l' }";
  text.replace(text.rfind(loss), loss.size(), "top: 'l' loss_weight: 1000 }");
  SolverParameter param = ParseText<SolverParameter>(
      "precision: FP16 base_lr: 0.001 lr_policy: 'fixed' max_iter: 1 display: 0 random_seed: 2 "
      "loss_scale: 65536 snapshot_after_train: false net_param { " +
      text + " }");
  auto solver = SolverRegistry<float>::CreateSolver(param, TestGpu());
  // The trained parameters (BatchNorm's statistics move in every forward, as in PyTorch).
  const auto trained = [&solver] {
    std::vector<float> values;
    for (const char* name : {"conv", "scale", "ip1", "ip2"}) {
      for (const auto& blob : solver->net()->layer_by_name(name)->blobs()) {
        values.insert(values.end(), blob->cpu_data(), blob->cpu_data() + blob->count());
      }
    }
    return values;
  };
  const std::vector<float> before = trained();
  solver->Step(1);
  const std::vector<float> after = trained();
  EXPECT_EQ(after, before) << "the overflowed update was applied";
  EXPECT_EQ(solver->loss_scale(), 32768.f);
  EXPECT_FALSE(solver->divergence().has_value());
  // The overflow is fp16's: in fp32 the same scaled gradients fit.
  param.set_precision(FP32);
  param.set_loss_scaling(SolverParameter::DYNAMIC_LOSS_SCALING);
  auto fp32 = SolverRegistry<float>::CreateSolver(param, TestGpu());
  fp32->Step(1);
  EXPECT_EQ(fp32->loss_scale(), 65536.f);
}

}  // namespace
}  // namespace doppio
