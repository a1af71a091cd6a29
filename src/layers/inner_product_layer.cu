#include "doppio/core/layer_kernels.cuh"
#include "doppio/device/gpu_half.cuh"
#include "doppio/layers/inner_product_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
// Each of the m rows of out (m x n, 16 bits) = bias (fp32), or 0 without one: the GEMM then
// adds its product with beta 1, so the output is rounded to 16 bits once.
template <typename S>
__global__ void RowsFromBias(long long count, int n, const float* bias, S* out) {
  DOPPIO_KERNEL_LOOP(i, count) { out[i] = StoreAs<S>::From(bias ? bias[i % n] : 0.f); }
}

// bias_diff[j] += the sum of column j of dy (m x n, 16 bits), in fp32.
template <typename S>
__global__ void AddColumnSums(long long n, int m, const S* dy, float* bias_diff) {
  DOPPIO_KERNEL_LOOP(j, n) {
    float sum = 0.f;
    for (int i = 0; i < m; ++i) sum += Load(dy[static_cast<long long>(i) * n + j]);
    bias_diff[j] += sum;
  }
}
}  // namespace

template <typename Dtype>
void InnerProductLayer<Dtype>::Forward_gpu16(const BlobVec& bottom, const BlobVec& top,
                                             GpuStorage storage) {
  GpuContext& gpu = this->gpu();
  const void* in = input_reader_.Read(bottom[0]->data(), storage, gpu);
  const void* weight = weight_reader_.Read(this->blobs_[0]->data(), storage, gpu);
  void* out = top[0]->data()->mutable_raw_gpu_data(gpu, storage);
  const float* bias =
      bias_term_ ? reinterpret_cast<const float*>(this->blobs_[1]->gpu_data(gpu)) : nullptr;
  const long long count = static_cast<long long>(M_) * N_;
  WithStorageType<float>(storage, [&](auto type) {
    using S = decltype(type);
    LaunchKernel("RowsFromBias", gpu, count, RowsFromBias<S>, count, N_, bias,
                 static_cast<S*>(out));
  });
  gpu_gemm_ex(gpu, Trans::kNo, transpose_ ? Trans::kNo : Trans::kYes, M_, N_, K_, 1.f, storage, in,
              weight, 1.f, storage, out);
}

template <typename Dtype>
void InnerProductLayer<Dtype>::Backward_gpu16(const BlobVec& top,
                                              const std::vector<bool>& propagate_down,
                                              const BlobVec& bottom, GpuStorage storage) {
  GpuContext& gpu = this->gpu();
  const void* top_diff = diff_reader_.Read(top[0]->diff(), storage, gpu);
  if (this->param_propagate_down(0)) {
    const void* in = input_reader_.Read(bottom[0]->data(), storage, gpu);
    void* weight_diff = this->blobs_[0]->mutable_gpu_diff(gpu);
    if (transpose_) {
      gpu_gemm_ex(gpu, Trans::kYes, Trans::kNo, K_, N_, M_, 1.f, storage, in, top_diff, 1.f,
                  GpuStorage::kFloat32, weight_diff);
    } else {
      gpu_gemm_ex(gpu, Trans::kYes, Trans::kNo, N_, K_, M_, 1.f, storage, top_diff, in, 1.f,
                  GpuStorage::kFloat32, weight_diff);
    }
  }
  if (bias_term_ && this->param_propagate_down(1)) {
    auto* bias_diff = reinterpret_cast<float*>(this->blobs_[1]->mutable_gpu_diff(gpu));
    WithStorageType<float>(storage, [&](auto type) {
      using S = decltype(type);
      LaunchKernel("AddColumnSums", gpu, N_, AddColumnSums<S>, static_cast<long long>(N_), M_,
                   static_cast<const S*>(top_diff), bias_diff);
    });
  }
  if (propagate_down[0]) {
    const void* weight = weight_reader_.Read(this->blobs_[0]->data(), storage, gpu);
    gpu_gemm_ex(gpu, Trans::kNo, transpose_ ? Trans::kYes : Trans::kNo, M_, K_, N_, 1.f, storage,
                top_diff, weight, 0.f, storage,
                bottom[0]->diff()->mutable_raw_gpu_data(gpu, storage));
  }
}

template <typename Dtype>
void InnerProductLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (M_ == 0) return;
  const GpuStorage storage = GpuStorageOf(*this);
  if (storage != GpuStorage::kFloat32 && K_ > 0) {
    Forward_gpu16(bottom, top, storage);
    return;
  }
  GpuContext& gpu = this->gpu();
  const Dtype* in = bottom[0]->gpu_data(gpu);
  const Dtype* weight = this->blobs_[0]->gpu_data(gpu);
  Dtype* out = top[0]->mutable_gpu_data(gpu);
  gpu_gemm<Dtype>(gpu, Trans::kNo, transpose_ ? Trans::kNo : Trans::kYes, M_, N_, K_, Dtype(1), in,
                  weight, Dtype(0), out);
  if (bias_term_) {
    gpu_gemm<Dtype>(gpu, Trans::kNo, Trans::kNo, M_, N_, 1, Dtype(1),
                    bias_multiplier_.gpu_data(gpu), this->blobs_[1]->gpu_data(gpu), Dtype(1), out);
  }
}

template <typename Dtype>
void InnerProductLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                            const std::vector<bool>& propagate_down,
                                            const BlobVec& bottom) {
  if (M_ == 0) return;
  const GpuStorage storage = GpuStorageOf(*this);
  if (storage != GpuStorage::kFloat32 && K_ > 0) {
    Backward_gpu16(top, propagate_down, bottom, storage);
    return;
  }
  GpuContext& gpu = this->gpu();
  const Dtype* top_diff = top[0]->gpu_diff(gpu);
  const Dtype* in = bottom[0]->gpu_data(gpu);
  if (this->param_propagate_down(0)) {
    Dtype* weight_diff = this->blobs_[0]->mutable_gpu_diff(gpu);
    if (transpose_) {
      gpu_gemm<Dtype>(gpu, Trans::kYes, Trans::kNo, K_, N_, M_, Dtype(1), in, top_diff, Dtype(1),
                      weight_diff);
    } else {
      gpu_gemm<Dtype>(gpu, Trans::kYes, Trans::kNo, N_, K_, M_, Dtype(1), top_diff, in, Dtype(1),
                      weight_diff);
    }
  }
  if (bias_term_ && this->param_propagate_down(1)) {
    gpu_gemv<Dtype>(gpu, Trans::kYes, M_, N_, Dtype(1), top_diff, bias_multiplier_.gpu_data(gpu),
                    Dtype(1), this->blobs_[1]->mutable_gpu_diff(gpu));
  }
  if (propagate_down[0]) {
    gpu_gemm<Dtype>(gpu, Trans::kNo, transpose_ ? Trans::kYes : Trans::kNo, M_, K_, N_, Dtype(1),
                    top_diff, this->blobs_[0]->gpu_data(gpu), Dtype(0),
                    bottom[0]->mutable_gpu_diff(gpu));
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(InnerProductLayer);

}  // namespace doppio
