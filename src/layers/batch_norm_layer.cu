#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/batch_norm_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
// (x - mean[c])^2 for the element at i of a (num, channels, inner) layout.
template <typename Dtype>
struct SquaredDeviationTerm {
  const Dtype* x;
  const Dtype* mean;
  int channels;
  int inner;
  __device__ Dtype operator()(long long i) const {
    const Dtype d = x[i] - mean[(i / inner) % channels];
    return d * d;
  }
};

// The stored statistics: mean = mean_sum / factor, var = var_sum / factor (0 when the factor
// is 0), read on the device so that the parameter arena never moves to the host.
template <typename Dtype>
__global__ void GlobalStatistics(int channels, const Dtype* mean_sum, const Dtype* var_sum,
                                 const Dtype* stored_factor, Dtype* mean, Dtype* var) {
  DOPPIO_KERNEL_LOOP(c, channels) {
    const Dtype stored = stored_factor[0];
    const Dtype factor = stored == 0 ? Dtype(0) : Dtype(1) / stored;
    mean[c] = factor * mean_sum[c];
    var[c] = factor * var_sum[c];
  }
}

template <typename Dtype>
__global__ void UpdateFactor(Dtype* factor, Dtype moving_average_fraction) {
  if (blockIdx.x == 0 && threadIdx.x == 0) factor[0] = factor[0] * moving_average_fraction + 1;
}

template <typename Dtype>
__global__ void InverseStd(int channels, Dtype eps, Dtype* var_to_inv_std) {
  DOPPIO_KERNEL_LOOP(c, channels) { var_to_inv_std[c] = Dtype(1) / sqrt(var_to_inv_std[c] + eps); }
}

template <typename Dtype>
__global__ void Normalize(long long n, int channels, int inner, const Dtype* x, const Dtype* mean,
                          const Dtype* inv_std, Dtype* x_norm, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const int c = static_cast<int>((i / inner) % channels);
    const Dtype v = (x[i] - mean[c]) * inv_std[c];
    if (x_norm) x_norm[i] = v;
    y[i] = v;
  }
}

template <typename Dtype>
__global__ void ScaleByChannel(long long n, int channels, int inner, const Dtype* dy,
                               const Dtype* inv_std, Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) { dx[i] = dy[i] * inv_std[(i / inner) % channels]; }
}

template <typename Dtype>
__global__ void BatchNormBackward(long long n, int channels, int inner, const Dtype* dy,
                                  const Dtype* x_norm, const Dtype* sum_dy,
                                  const Dtype* sum_dy_xnorm, const Dtype* inv_std, Dtype inv_m,
                                  Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const int c = static_cast<int>((i / inner) % channels);
    dx[i] = (dy[i] - sum_dy[c] * inv_m - sum_dy_xnorm[c] * inv_m * x_norm[i]) * inv_std[c];
  }
}
}  // namespace

template <typename Dtype>
void BatchNormLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const int C = channels_;
  const int S = spatial_dim_;
  const int m = num_ * S;
  const long long count = bottom[0]->count();
  mean_gpu_.Reshape(std::vector<int>{C});
  inv_std_gpu_.Reshape(std::vector<int>{C});
  const Dtype* x = bottom[0]->gpu_data(gpu);
  Dtype* mean = mean_gpu_.mutable_gpu_data(gpu);
  Dtype* var = inv_std_gpu_.mutable_gpu_data(gpu);
  if (use_global_stats_) {
    LaunchKernel("GlobalStatistics", gpu, C, GlobalStatistics<Dtype>, C,
                 this->blobs_[0]->gpu_data(gpu), this->blobs_[1]->gpu_data(gpu),
                 this->blobs_[2]->gpu_data(gpu), mean, var);
  } else {
    const Dtype inv_m = m == 0 ? Dtype(0) : Dtype(1) / Dtype(m);
    ChannelSum(gpu, num_, C, S, ProductTerm<Dtype>{x, nullptr}, Dtype(0), mean);
    gpu_scal(gpu, C, inv_m, mean);
    ChannelSum(gpu, num_, C, S, SquaredDeviationTerm<Dtype>{x, mean, C, S}, Dtype(0), var);
    gpu_scal(gpu, C, inv_m, var);
    // Running sums: factor <- maf * factor + 1, mean_sum <- maf * mean_sum + mean, and the
    // same for the variance with the unbiased correction m / (m - 1).
    const Dtype maf = moving_average_fraction_;
    DOPPIO_LAUNCH(UpdateFactor<Dtype>, 1, 1, gpu.stream())
    (this->blobs_[2]->mutable_gpu_data(gpu), maf);
    DOPPIO_CUDA_POST_KERNEL_CHECK("UpdateFactor");
    const Dtype correction = m > 1 ? Dtype(m) / Dtype(m - 1) : Dtype(1);
    gpu_axpby(gpu, C, Dtype(1), static_cast<const Dtype*>(mean), maf,
              this->blobs_[0]->mutable_gpu_data(gpu));
    gpu_axpby(gpu, C, correction, static_cast<const Dtype*>(var), maf,
              this->blobs_[1]->mutable_gpu_data(gpu));
  }
  LaunchKernel("InverseStd", gpu, C, InverseStd<Dtype>, C, eps_, var);
  Dtype* x_norm = use_global_stats_ ? nullptr : x_norm_.mutable_gpu_data(gpu);
  // Reads x before writing y at the same index: in place is fine.
  LaunchKernel("Normalize", gpu, count, Normalize<Dtype>, count, C, S, x,
               static_cast<const Dtype*>(mean), static_cast<const Dtype*>(var), x_norm,
               top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void BatchNormLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                         const std::vector<bool>& propagate_down,
                                         const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const int C = channels_;
  const int S = spatial_dim_;
  const long long count = bottom[0]->count();
  const Dtype* dy = top[0]->gpu_diff(gpu);
  const Dtype* inv_std = inv_std_gpu_.gpu_data(gpu);
  Dtype* dx = bottom[0]->mutable_gpu_diff(gpu);
  if (use_global_stats_) {
    LaunchKernel("ScaleByChannel", gpu, count, ScaleByChannel<Dtype>, count, C, S, dy, inv_std, dx);
    return;
  }
  const Dtype* x_norm = x_norm_.gpu_data(gpu);
  sum_dy_gpu_.Reshape(std::vector<int>{C});
  sum_dy_xnorm_gpu_.Reshape(std::vector<int>{C});
  Dtype* sum_dy = sum_dy_gpu_.mutable_gpu_data(gpu);
  Dtype* sum_dy_xnorm = sum_dy_xnorm_gpu_.mutable_gpu_data(gpu);
  ChannelSum(gpu, num_, C, S, ProductTerm<Dtype>{dy, nullptr}, Dtype(0), sum_dy);
  ChannelSum(gpu, num_, C, S, ProductTerm<Dtype>{dy, x_norm}, Dtype(0), sum_dy_xnorm);
  const int m = num_ * S;
  const Dtype inv_m = m == 0 ? Dtype(0) : Dtype(1) / Dtype(m);
  // The sums are complete (earlier on the stream) before any dx is written: dx may alias dy.
  LaunchKernel("BatchNormBackward", gpu, count, BatchNormBackward<Dtype>, count, C, S, dy, x_norm,
               static_cast<const Dtype*>(sum_dy), static_cast<const Dtype*>(sum_dy_xnorm), inv_std,
               inv_m, dx);
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(BatchNormLayer);

}  // namespace doppio
