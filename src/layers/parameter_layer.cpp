#include "doppio/layers/parameter_layer.hpp"

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void ParameterLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const ParameterParameter& param = this->layer_param_.parameter_param();
  DOPPIO_ENSURE(param.has_shape())
      << this->Describe() << ": parameter_param.shape is required (the shape of the parameter)";
  Blob<Dtype> shaped;
  shaped.Reshape(param.shape());
  if (this->blobs_.empty()) {
    this->blobs_.push_back(std::make_shared<Blob<Dtype>>(shaped.shape()));
  } else {
    // Weights that came with the layer must fit the declared shape.
    DOPPIO_ENSURE(this->blobs_.size() == 1)
        << this->Describe() << " was given " << this->blobs_.size()
        << " parameter blobs; expected 1";
    DOPPIO_ENSURE(this->blobs_[0]->shape() == shaped.shape())
        << this->Describe() << ": parameter blob has shape " << this->blobs_[0]->shape_string()
        << " but parameter_param.shape is " << shaped.shape_string();
  }
  this->param_propagate_down_.resize(1, true);
}

template <typename Dtype>
void ParameterLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  top[0]->ReshapeLike(*this->blobs_[0]);
}

template <typename Dtype>
void ParameterLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  cpu_copy(top[0]->count(), this->blobs_[0]->cpu_data(), top[0]->mutable_cpu_data());
}

template <typename Dtype>
void ParameterLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                         const std::vector<bool>& propagate_down,
                                         const BlobVec& bottom) {
  if (!this->param_propagate_down(0)) return;
  cpu_axpy(top[0]->count(), Dtype(1), top[0]->cpu_diff(), this->blobs_[0]->mutable_cpu_diff());
}

DOPPIO_INSTANTIATE_CLASS(ParameterLayer);
REGISTER_LAYER_CLASS(Parameter);

}  // namespace doppio
