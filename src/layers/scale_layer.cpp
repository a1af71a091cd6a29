#include "doppio/layers/scale_layer.hpp"

#include "doppio/core/filler.hpp"
#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void ScaleLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const ScaleParameter& param = this->layer_param_.scale_param();
  // Stored blobs (from a model) are the scale (one bottom only), then the bias.
  // A model may also store only the scale of a bias_term layer; the bias is then created.
  const int stored = static_cast<int>(this->blobs_.size());
  const int learned_scale = bottom.size() == 1 ? 1 : 0;
  in_place_ = bottom[0] == top[0];
  const int expected = learned_scale + (param.bias_term() ? 1 : 0);
  DOPPIO_ENSURE(stored == 0 || stored == expected || stored == learned_scale)
      << this->Describe() << ": expected " << expected << " stored blob(s) (the scale when it "
      << "is not a bottom, then the bias when bias_term is set), got " << stored;
  if (bottom.size() == 1 && stored == 0) {
    const std::vector<int> shape =
        BroadcastParamShape(*this, "scale_param", param.axis(), param.num_axes(), *bottom[0]);
    this->blobs_.push_back(std::make_shared<Blob<Dtype>>(shape));
    FillerParameter filler = param.filler();
    if (!param.has_filler()) {
      filler.set_type("constant");
      filler.set_value(1);
    }
    GetFiller<Dtype>(filler)->Fill(this->blobs_[0].get(), this->rng());
  }
  if (param.bias_term()) {
    // Check the scale's shape first, so that a mistake is reported against scale_param.
    const Blob<Dtype>& scale = bottom.size() > 1 ? *bottom[1] : *this->blobs_[0];
    BroadcastAxis(*this, "scale_param", param.axis(), *bottom[0], scale);
    LayerParameter bias_param;
    bias_param.set_name(this->layer_param_.name());
    bias_param.set_type("Bias");
    bias_param.set_phase(this->layer_param_.phase());
    BiasParameter* bp = bias_param.mutable_bias_param();
    bp->set_axis(param.axis());
    bp->set_num_axes(bottom.size() > 1 ? bottom[1]->num_axes() : this->blobs_[0]->num_axes());
    *bp->mutable_filler() = param.bias_filler();
    bias_layer_ = std::make_unique<BiasLayer<Dtype>>(bias_param);
    bias_layer_->set_seed(this->rng().engine()());
    const bool bias_stored = stored == expected && stored > 0;
    if (bias_stored) bias_layer_->blobs().push_back(this->blobs_.back());
    bias_bottom_ = {bottom[0]};
    bias_layer_->SetUp(bias_bottom_, top);
    if (bias_stored) {
      bias_param_id_ = stored - 1;
    } else {
      bias_param_id_ = static_cast<int>(this->blobs_.size());
      this->blobs_.push_back(bias_layer_->blobs()[0]);
    }
  }
  this->param_propagate_down_.resize(this->blobs_.size(), true);
}

template <typename Dtype>
void ScaleLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const Blob<Dtype>& scale = bottom.size() > 1 ? *bottom[1] : *this->blobs_[0];
  const int axis = BroadcastAxis(*this, "scale_param", this->layer_param_.scale_param().axis(),
                                 *bottom[0], scale);
  outer_dim_ = bottom[0]->count(0, axis);
  scale_dim_ = scale.count();
  inner_dim_ = bottom[0]->count(axis + scale.num_axes());
  if (in_place_) {
    if (!kept_input_) saved_input_.ReshapeLike(*bottom[0]);
  } else {
    top[0]->ReshapeLike(*bottom[0]);
  }
  if (bias_layer_) {
    bias_bottom_[0] = top[0];
    bias_layer_->Reshape(bias_bottom_, top);
  }
}

template <typename Dtype>
bool ScaleLayer<Dtype>::UseKeptBottomCopy(const Blob<Dtype>* kept) {
  if (!in_place_) return false;
  kept_input_ = kept;
  return true;
}

template <typename Dtype>
void ScaleLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const Dtype* scale = (bottom.size() > 1 ? bottom[1] : this->blobs_[0].get())->cpu_data();
  if (in_place_ && !kept_input_) {
    cpu_copy(bottom[0]->count(), bottom[0]->cpu_data(), saved_input_.mutable_cpu_data());
  }
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  for (int n = 0; n < outer_dim_; ++n) {
    for (int d = 0; d < scale_dim_; ++d) {
      const int base = (n * scale_dim_ + d) * inner_dim_;
      const Dtype s = scale[d];
      for (int k = 0; k < inner_dim_; ++k) y[base + k] = x[base + k] * s;
    }
  }
  if (bias_layer_) bias_layer_->Forward(bias_bottom_, top);
}

template <typename Dtype>
void ScaleLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  if (bias_layer_ && this->param_propagate_down(bias_param_id_)) {
    // The bias layer works in place on the top: only its parameter gradient is wanted.
    bias_layer_->Backward(top, std::vector<bool>{false}, bias_bottom_);
  }
  const Dtype* dy = top[0]->cpu_diff();
  // A learned scale accumulates its gradient; a scale bottom has its diff overwritten.
  const bool learned = bottom.size() == 1;
  if (learned ? this->param_propagate_down(0) : propagate_down[1]) {
    const Dtype* x = !in_place_    ? bottom[0]->cpu_data()
                     : kept_input_ ? kept_input_->cpu_data()
                                   : saved_input_.cpu_data();
    Blob<Dtype>* scale = learned ? this->blobs_[0].get() : bottom[1];
    Dtype* ds = scale->mutable_cpu_diff();
    if (!learned) cpu_set(scale_dim_, Dtype(0), ds);
    for (int n = 0; n < outer_dim_; ++n) {
      for (int d = 0; d < scale_dim_; ++d) {
        const int base = (n * scale_dim_ + d) * inner_dim_;
        if (inner_dim_ >= 32) {
          ds[d] += cpu_dot(inner_dim_, dy + base, x + base);
        } else {
          Dtype sum = 0;
          for (int k = 0; k < inner_dim_; ++k) sum += dy[base + k] * x[base + k];
          ds[d] += sum;
        }
      }
    }
  }
  if (propagate_down[0]) {
    // After the scale gradient, which still reads dy: dx may alias dy (in-place).
    const Dtype* scale = (bottom.size() > 1 ? bottom[1] : this->blobs_[0].get())->cpu_data();
    Dtype* dx = bottom[0]->mutable_cpu_diff();
    for (int n = 0; n < outer_dim_; ++n) {
      for (int d = 0; d < scale_dim_; ++d) {
        const int base = (n * scale_dim_ + d) * inner_dim_;
        const Dtype s = scale[d];
        for (int k = 0; k < inner_dim_; ++k) dx[base + k] = dy[base + k] * s;
      }
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(ScaleLayer);
REGISTER_LAYER_CLASS_WITH_TRAITS(Scale, LayerTraits().Normalization());

}  // namespace doppio
