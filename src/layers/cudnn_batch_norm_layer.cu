#ifdef DOPPIO_WITH_CUDNN

#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/cudnn_batch_norm_layer.hpp"

namespace doppio {

namespace {
// Caffe's running sums from the batch's mean and unbiased variance: factor <- maf * factor + 1,
// mean_sum <- maf * mean_sum + mean, var_sum <- maf * var_sum + var.
template <typename Dtype>
__global__ void AddToRunningSums(int channels, Dtype maf, const Dtype* mean, const Dtype* var,
                                 Dtype* mean_sum, Dtype* var_sum, Dtype* factor) {
  DOPPIO_KERNEL_LOOP(c, channels) {
    mean_sum[c] = maf * mean_sum[c] + mean[c];
    var_sum[c] = maf * var_sum[c] + var[c];
    if (c == 0) factor[0] = maf * factor[0] + 1;
  }
}

// PyTorch's choice in NCHW: the persistent mode "imposes some limits on the range of values"
// (cudnn_ops.h) and gains little outside NHWC.
constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL;
}  // namespace

template <typename Dtype>
void CudnnBatchNormLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  CountForward();
  if (!keeps_input()) {
    BatchNormLayer<Dtype>::Forward_gpu(bottom, top);
    return;
  }
  GpuContext& gpu = this->gpu();
  const int C = this->channels_;
  const int S = this->spatial_dim_;
  DOPPIO_ENSURE(this->num_ * S > 1)
      << this->Describe() << ": cuDNN's batch normalization needs more than one value per "
      << "channel in a batch, the input " << bottom[0]->shape_string() << " has one; use "
      << "batch_norm_param { engine: CAFFE }";
  const GpuStorage storage = GpuStorageOf(*this);
  data_desc_.Set4d(CudnnStorageType<Dtype>(storage), this->num_, C, S, 1);
  param_desc_.Set4d<Dtype>(1, C, 1, 1);
  PrepareGammaBeta();
  const void* x = Input(*bottom[0], storage);
  const Dtype* gamma = gamma_beta_.gpu_data(gpu);
  // Factor 1: cuDNN's "running" mean and variance are the batch's own (unbiased variance).
  // Cleared first, so that they never depend on what the last call left (0 x NaN is NaN).
  Dtype* batch_mean = batch_stats_.mutable_gpu_data(gpu);
  Dtype* batch_var = batch_mean + C;
  gpu_set(gpu, 2 * C, Dtype(0), batch_mean);
  DOPPIO_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
      gpu.cudnn(), kMode, CudnnScalar<Dtype>::one(), CudnnScalar<Dtype>::zero(), data_desc_.get(),
      x, data_desc_.get(), top[0]->data()->mutable_raw_gpu_data(gpu, storage), param_desc_.get(),
      gamma, gamma + C, 1.0, batch_mean, batch_var, double(this->eps_),
      saved_mean_.mutable_gpu_data(gpu), saved_inv_std_.mutable_gpu_data(gpu)));
  LaunchKernel("AddToRunningSums", gpu, C, AddToRunningSums<Dtype>, C,
               this->moving_average_fraction_, static_cast<const Dtype*>(batch_mean),
               static_cast<const Dtype*>(batch_var), this->blobs_[0]->mutable_gpu_data(gpu),
               this->blobs_[1]->mutable_gpu_data(gpu), this->blobs_[2]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void CudnnBatchNormLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                              const std::vector<bool>& propagate_down,
                                              const BlobVec& bottom) {
  if (!keeps_input()) {
    BatchNormLayer<Dtype>::Backward_gpu(top, propagate_down, bottom);
    return;
  }
  const bool scale_grad = fused() && scale_layer_->param_propagate_down(0);
  const bool bias_grad = fused() && bias_param_ >= 0 && scale_layer_->param_propagate_down(1);
  if (!propagate_down[0] && !scale_grad && !bias_grad) return;
  GpuContext& gpu = this->gpu();
  const int C = this->channels_;
  const int count = bottom[0]->count();
  const GpuStorage storage = GpuStorageOf(*this);
  const bool fp32 = storage == GpuStorage::kFloat32;
  const std::shared_ptr<SyncedMemory>& input = in_place_ ? this->kept() : bottom[0]->data();
  const void* x = fp32 ? input->gpu_data(gpu) : input_reader_.Read(input, storage, gpu);
  const void* dy =
      fp32 ? top[0]->diff()->gpu_data(gpu) : diff_reader_.Read(top[0]->diff(), storage, gpu);
  // In place dy is the bottom's diff too: the gradient goes to scratch, then over it. Without
  // propagate_down the scratch takes what nothing reads.
  const bool direct = propagate_down[0] && !in_place_;
  const std::size_t element = fp32 ? sizeof(Dtype) : GpuStorageBytes(storage);
  void* dx = direct ? bottom[0]->diff()->mutable_raw_gpu_data(gpu, storage)
                    : gpu.Workspace(count * element);
  Dtype* dgamma = gamma_beta_diff_.mutable_gpu_data(gpu);
  DOPPIO_CUDNN_CHECK(cudnnBatchNormalizationBackward(
      gpu.cudnn(), kMode, CudnnScalar<Dtype>::one(), CudnnScalar<Dtype>::zero(),
      CudnnScalar<Dtype>::one(), CudnnScalar<Dtype>::zero(), data_desc_.get(), x, data_desc_.get(),
      dy, data_desc_.get(), dx, param_desc_.get(), gamma_beta_.gpu_data(gpu), dgamma, dgamma + C,
      double(this->eps_), saved_mean_.gpu_data(gpu), saved_inv_std_.gpu_data(gpu)));
  if (propagate_down[0] && in_place_) {
    if (fp32) {
      gpu_copy(gpu, count, static_cast<const Dtype*>(dx), bottom[0]->mutable_gpu_diff(gpu));
    } else {
      gpu_convert(gpu, count, storage, dx, storage,
                  bottom[0]->diff()->mutable_raw_gpu_data(gpu, storage));
    }
  }
  const auto& params = fused() ? scale_layer_->blobs() : this->blobs_;
  if (scale_grad) {
    gpu_axpy(gpu, C, Dtype(1), static_cast<const Dtype*>(dgamma), params[0]->mutable_gpu_diff(gpu));
  }
  if (bias_grad) {
    gpu_axpy(gpu, C, Dtype(1), static_cast<const Dtype*>(dgamma + C),
             params[bias_param_]->mutable_gpu_diff(gpu));
  }
}

template <typename Dtype>
const void* CudnnBatchNormLayer<Dtype>::Input(const Blob<Dtype>& bottom, GpuStorage storage) {
  GpuContext& gpu = this->gpu();
  const bool fp32 = storage == GpuStorage::kFloat32;
  if (!in_place_) {
    return fp32 ? bottom.data()->gpu_data(gpu) : input_reader_.Read(bottom.data(), storage, gpu);
  }
  // The net exchanged the blob's buffer for the kept one (the input is there, in whatever
  // storage its producer wrote), or the input is copied there.
  if (this->TakeExchanged()) {
    return fp32 ? this->kept()->gpu_data(gpu) : input_reader_.Read(this->kept(), storage, gpu);
  }
  const long long count = bottom.count();
  if (fp32) {
    const Dtype* in = bottom.gpu_data(gpu);
    Dtype* kept = static_cast<Dtype*>(this->kept()->mutable_gpu_data(gpu));
    gpu_copy(gpu, static_cast<int>(count), in, kept);
    return kept;
  }
  const void* in = input_reader_.Read(bottom.data(), storage, gpu);
  void* kept = this->kept()->mutable_raw_gpu_data(gpu, storage);
  gpu_convert(gpu, count, storage, in, storage, kept);
  return kept;
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(CudnnBatchNormLayer);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
