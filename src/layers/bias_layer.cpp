#include "doppio/layers/bias_layer.hpp"

#include "doppio/core/filler.hpp"
#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
std::vector<int> BroadcastParamShape(const Layer<Dtype>& layer, const char* field, int axis,
                                     int num_axes, const Blob<Dtype>& bottom) {
  const int axes = bottom.num_axes();
  DOPPIO_ENSURE(axis >= -axes && axis < axes)
      << layer.Describe() << ": " << field << ".axis " << axis << " is out of range for bottom "
      << bottom.shape_string();
  const int start = axis < 0 ? axis + axes : axis;
  DOPPIO_ENSURE(num_axes >= -1) << layer.Describe() << ": " << field
                                << ".num_axes must be non-negative, or -1 to reach "
                                << "the last axis; got " << num_axes;
  const int end = num_axes == -1 ? axes : start + num_axes;
  DOPPIO_ENSURE(end <= axes) << layer.Describe() << ": " << field << ".axis " << axis
                             << " with num_axes " << num_axes << " reaches beyond bottom "
                             << bottom.shape_string();
  return std::vector<int>(bottom.shape().begin() + start, bottom.shape().begin() + end);
}

template <typename Dtype>
int BroadcastAxis(const Layer<Dtype>& layer, const char* field, int axis, const Blob<Dtype>& bottom,
                  const Blob<Dtype>& param) {
  // A scalar covers the whole blob whatever the axis says.
  if (param.num_axes() == 0) return 0;
  const int axes = bottom.num_axes();
  DOPPIO_ENSURE(axis >= -axes && axis < axes)
      << layer.Describe() << ": " << field << ".axis " << axis << " is out of range for bottom "
      << bottom.shape_string();
  const int start = axis < 0 ? axis + axes : axis;
  bool match = start + param.num_axes() <= axes;
  for (int i = 0; match && i < param.num_axes(); ++i) {
    match = bottom.shape()[start + i] == param.shape()[i];
  }
  DOPPIO_ENSURE(match) << layer.Describe() << ": shape " << param.shape_string()
                       << " does not match bottom " << bottom.shape_string() << " from " << field
                       << ".axis " << start;
  return start;
}

template <typename Dtype>
void BiasLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const BiasParameter& param = this->layer_param_.bias_param();
  if (bottom.size() == 1 && this->blobs_.empty()) {
    const std::vector<int> shape =
        BroadcastParamShape(*this, "bias_param", param.axis(), param.num_axes(), *bottom[0]);
    this->blobs_.push_back(std::make_shared<Blob<Dtype>>(shape));
    GetFiller<Dtype>(param.filler())->Fill(this->blobs_[0].get(), this->rng());
  }
  DOPPIO_ENSURE(bottom.size() + this->blobs_.size() == 2)
      << this->Describe() << ": takes the bias either as a second bottom or as a learned "
      << "parameter, got " << bottom.size() << " bottom(s) and " << this->blobs_.size()
      << " stored blob(s)";
  this->param_propagate_down_.resize(this->blobs_.size(), true);
}

template <typename Dtype>
void BiasLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const Blob<Dtype>& bias = bottom.size() > 1 ? *bottom[1] : *this->blobs_[0];
  const int axis =
      BroadcastAxis(*this, "bias_param", this->layer_param_.bias_param().axis(), *bottom[0], bias);
  outer_dim_ = bottom[0]->count(0, axis);
  bias_dim_ = bias.count();
  inner_dim_ = bottom[0]->count(axis + bias.num_axes());
  if (bottom[0] != top[0]) top[0]->ReshapeLike(*bottom[0]);
}

template <typename Dtype>
void BiasLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const Dtype* bias = (bottom.size() > 1 ? bottom[1] : this->blobs_[0].get())->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  if (bottom[0] != top[0]) cpu_copy(bottom[0]->count(), bottom[0]->cpu_data(), y);
  for (int n = 0; n < outer_dim_; ++n) {
    for (int d = 0; d < bias_dim_; ++d) {
      Dtype* block = y + (n * bias_dim_ + d) * inner_dim_;
      const Dtype b = bias[d];
      for (int k = 0; k < inner_dim_; ++k) block[k] += b;
    }
  }
}

template <typename Dtype>
void BiasLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  const Dtype* dy = top[0]->cpu_diff();
  if (propagate_down[0] && bottom[0] != top[0]) {
    cpu_copy(bottom[0]->count(), dy, bottom[0]->mutable_cpu_diff());
  }
  // A learned bias accumulates its gradient; a bias bottom has its diff overwritten.
  const bool learned = bottom.size() == 1;
  if (learned ? !this->param_propagate_down(0) : !propagate_down[1]) return;
  Blob<Dtype>* bias = learned ? this->blobs_[0].get() : bottom[1];
  Dtype* db = bias->mutable_cpu_diff();
  if (!learned) cpu_set(bias_dim_, Dtype(0), db);
  for (int n = 0; n < outer_dim_; ++n) {
    for (int d = 0; d < bias_dim_; ++d) {
      const Dtype* block = dy + (n * bias_dim_ + d) * inner_dim_;
      Dtype sum = 0;
      for (int k = 0; k < inner_dim_; ++k) sum += block[k];
      db[d] += sum;
    }
  }
}

template int BroadcastAxis<float>(const Layer<float>&, const char*, int, const Blob<float>&,
                                  const Blob<float>&);
template int BroadcastAxis<double>(const Layer<double>&, const char*, int, const Blob<double>&,
                                   const Blob<double>&);
template std::vector<int> BroadcastParamShape<float>(const Layer<float>&, const char*, int, int,
                                                     const Blob<float>&);
template std::vector<int> BroadcastParamShape<double>(const Layer<double>&, const char*, int, int,
                                                      const Blob<double>&);

DOPPIO_INSTANTIATE_CLASS(BiasLayer);
REGISTER_LAYER_CLASS_WITH_TRAITS(Bias, LayerTraits().Normalization());

}  // namespace doppio
