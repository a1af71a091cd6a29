#include "doppio/layers/cudnn_batch_norm_layer.hpp"

#ifdef DOPPIO_WITH_CUDNN

#include "doppio/core/layer_registry.hpp"
#include "doppio/device/gpu_math.hpp"

namespace doppio {

template <typename Dtype>
void CudnnBatchNormLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  BatchNormLayer<Dtype>::LayerSetUp(bottom, top);
  in_place_ = bottom[0] == top[0];
}

template <typename Dtype>
void CudnnBatchNormLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  BatchNormLayer<Dtype>::Reshape(bottom, top);
  if (!keeps_input()) return;
  const std::vector<int> channels{this->channels_};
  gamma_beta_.Reshape(std::vector<int>{2 * this->channels_});
  gamma_beta_diff_.Reshape(std::vector<int>{2 * this->channels_});
  batch_stats_.Reshape(std::vector<int>{2 * this->channels_});
  saved_mean_.Reshape(channels);
  saved_inv_std_.Reshape(channels);
  if (in_place_) this->SizeKept(bottom[0]->count() * sizeof(Dtype));
}

template <typename Dtype>
void CudnnBatchNormLayer<Dtype>::FuseScale(Layer<Dtype>* scale) {
  CHECK(keeps_input()) << this->Describe() << ": only batch statistics fuse a Scale";
  scale_layer_ = scale;
  bias_param_ = scale->layer_param().scale_param().bias_term() ? 1 : -1;
}

template <typename Dtype>
void CudnnBatchNormLayer<Dtype>::PrepareGammaBeta() {
  GpuContext& gpu = this->gpu();
  const int C = this->channels_;
  Dtype* gamma = gamma_beta_.mutable_gpu_data(gpu);
  Dtype* beta = gamma + C;
  if (!fused()) {
    gpu_set(gpu, C, Dtype(1), gamma);
    gpu_set(gpu, C, Dtype(0), beta);
    return;
  }
  const auto& params = scale_layer_->blobs();
  gpu_copy(gpu, C, params[0]->gpu_data(gpu), gamma);
  if (bias_param_ >= 0) {
    gpu_copy(gpu, C, params[bias_param_]->gpu_data(gpu), beta);
  } else {
    gpu_set(gpu, C, Dtype(0), beta);
  }
}

DOPPIO_INSTANTIATE_CLASS(CudnnBatchNormLayer);
DOPPIO_REGISTER_LAYER_ENGINE(BatchNorm, CUDNN, CudnnBatchNormLayer);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
