#include "doppio/layers/embed_layer.hpp"

#include <climits>

#include "doppio/core/filler.hpp"
#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void EmbedLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const EmbedParameter& param = this->layer_param_.embed_param();
  DOPPIO_ENSURE(param.num_output() > 0 && param.num_output() <= INT_MAX)
      << this->Describe() << ": embed_param.num_output must be positive";
  DOPPIO_ENSURE(param.input_dim() > 0 && param.input_dim() <= INT_MAX)
      << this->Describe() << ": embed_param.input_dim must be positive";
  num_output_ = static_cast<int>(param.num_output());
  input_dim_ = static_cast<int>(param.input_dim());
  bias_term_ = param.bias_term();
  const std::vector<int> weight_shape{input_dim_, num_output_};
  const std::vector<int> bias_shape{num_output_};
  if (this->blobs_.empty()) {
    this->blobs_.push_back(std::make_shared<Blob<Dtype>>(weight_shape));
    GetFiller<Dtype>(param.weight_filler())->Fill(this->blobs_[0].get(), this->rng());
    if (bias_term_) {
      this->blobs_.push_back(std::make_shared<Blob<Dtype>>(bias_shape));
      GetFiller<Dtype>(param.bias_filler())->Fill(this->blobs_[1].get(), this->rng());
    }
  } else {
    // Weights that came with the layer (e.g. from a .caffemodel) must fit the parameters.
    DOPPIO_ENSURE(this->blobs_.size() == (bias_term_ ? 2u : 1u))
        << this->Describe() << " was given " << this->blobs_.size()
        << " parameter blob(s); expected " << (bias_term_ ? 2 : 1);
    DOPPIO_ENSURE(this->blobs_[0]->shape() == weight_shape)
        << this->Describe() << ": weight blob has shape " << this->blobs_[0]->shape_string()
        << "; expected " << ShapeString(weight_shape) << " (input_dim x num_output)";
    DOPPIO_ENSURE(!bias_term_ || this->blobs_[1]->shape() == bias_shape)
        << this->Describe() << ": bias blob has shape " << this->blobs_[1]->shape_string()
        << "; expected " << ShapeString(bias_shape);
  }
  this->param_propagate_down_.resize(this->blobs_.size(), true);
}

template <typename Dtype>
void EmbedLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  std::vector<int> top_shape = bottom[0]->shape();
  top_shape.push_back(num_output_);
  top[0]->Reshape(top_shape);
}

template <typename Dtype>
int EmbedLayer<Dtype>::Index(const Dtype* indices, int n) const {
  const Dtype value = indices[n];
  // The range test comes first so the conversion below is defined (and NaN fails it).
  DOPPIO_ENSURE(value >= Dtype(0) && value < static_cast<Dtype>(input_dim_) &&
                static_cast<Dtype>(static_cast<int>(value)) == value)
      << this->Describe() << ": bottom element " << n << " is " << value
      << "; indices must be integers in [0, " << input_dim_ << ") (embed_param.input_dim)";
  return static_cast<int>(value);
}

template <typename Dtype>
void EmbedLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int count = bottom[0]->count();
  if (count == 0) return;
  const Dtype* indices = bottom[0]->cpu_data();
  const Dtype* weight = this->blobs_[0]->cpu_data();
  const Dtype* bias = bias_term_ ? this->blobs_[1]->cpu_data() : nullptr;
  Dtype* top_data = top[0]->mutable_cpu_data();
  for (int n = 0; n < count; ++n) {
    const Dtype* row = weight + static_cast<long long>(Index(indices, n)) * num_output_;
    Dtype* out = top_data + n * num_output_;
    if (bias) {
      for (int j = 0; j < num_output_; ++j) out[j] = row[j] + bias[j];
    } else {
      cpu_copy(num_output_, row, out);
    }
  }
}

template <typename Dtype>
void EmbedLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  DOPPIO_ENSURE(!propagate_down[0])
      << this->Describe() << " cannot backpropagate to its bottom, which holds indices";
  const int count = bottom[0]->count();
  if (count == 0) return;
  const Dtype* top_diff = top[0]->cpu_diff();
  if (this->param_propagate_down(0)) {
    const Dtype* indices = bottom[0]->cpu_data();
    Dtype* weight_diff = this->blobs_[0]->mutable_cpu_diff();
    for (int n = 0; n < count; ++n) {
      cpu_axpy(num_output_, Dtype(1), top_diff + n * num_output_,
               weight_diff + static_cast<long long>(Index(indices, n)) * num_output_);
    }
  }
  if (bias_term_ && this->param_propagate_down(1)) {
    // Column sums of the count x num_output top diff.
    Dtype* bias_diff = this->blobs_[1]->mutable_cpu_diff();
    for (int n = 0; n < count; ++n) {
      cpu_axpy(num_output_, Dtype(1), top_diff + n * num_output_, bias_diff);
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(EmbedLayer);
REGISTER_LAYER_CLASS(Embed);

}  // namespace doppio
