#include "doppio/layers/mvn_layer.hpp"

#include <cmath>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void MVNLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const MVNParameter& param = this->layer_param_.mvn_param();
  normalize_variance_ = param.normalize_variance();
  across_channels_ = param.across_channels();
  eps_ = param.eps();
  DOPPIO_ENSURE(param.eps() >= 0) << this->Describe()
                                  << ": mvn_param.eps must not be negative, got " << param.eps();
}

template <typename Dtype>
void MVNLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  top[0]->ReshapeLike(*bottom[0]);
  // Caffe's legacy axes: num, and channels (1 for a 1-d blob).
  const int num = bottom[0]->LegacyShape(0);
  rows_ = across_channels_ ? num : num * bottom[0]->LegacyShape(1);
  dim_ = rows_ > 0 ? bottom[0]->count() / rows_ : 0;
  for (Blob<Dtype>* b : {&mean_, &scale_, &sum_dy_, &sum_ydy_}) b->Reshape(std::vector<int>{rows_});
}

template <typename Dtype>
void MVNLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  Dtype* mean = mean_.mutable_cpu_data();
  Dtype* scale = scale_.mutable_cpu_data();
  for (int r = 0; r < rows_; ++r) {
    const Dtype* in = x + static_cast<long long>(r) * dim_;
    Dtype* out = y + static_cast<long long>(r) * dim_;
    Dtype sum = 0;
    for (int k = 0; k < dim_; ++k) sum += in[k];
    mean[r] = sum / dim_;
    Dtype squares = 0;
    for (int k = 0; k < dim_; ++k) squares += (in[k] - mean[r]) * (in[k] - mean[r]);
    scale[r] = normalize_variance_ ? std::sqrt(squares / dim_) + eps_ : Dtype(1);
    for (int k = 0; k < dim_; ++k) out[k] = (in[k] - mean[r]) / scale[r];
  }
}

template <typename Dtype>
void MVNLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                   const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const Dtype* y = top[0]->cpu_data();
  const Dtype* dy = top[0]->cpu_diff();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  const Dtype* scale = scale_.cpu_data();
  for (int r = 0; r < rows_; ++r) {
    const long long base = static_cast<long long>(r) * dim_;
    Dtype sum_dy = 0;
    Dtype sum_ydy = 0;
    for (int k = 0; k < dim_; ++k) {
      sum_dy += dy[base + k];
      sum_ydy += y[base + k] * dy[base + k];
    }
    if (!normalize_variance_) sum_ydy = 0;
    // In place dx is dy: each element is read before it is written.
    for (int k = 0; k < dim_; ++k) {
      dx[base + k] = (dy[base + k] - (sum_dy + y[base + k] * sum_ydy) / dim_) / scale[r];
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(MVNLayer);
REGISTER_LAYER_CLASS(MVN);

}  // namespace doppio
