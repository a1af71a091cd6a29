#include "doppio/layers/inner_product_layer.hpp"

#include "doppio/core/filler.hpp"
#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void InnerProductLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const std::string who = this->Describe();
  const InnerProductParameter& p = this->layer_param_.inner_product_param();
  N_ = static_cast<int>(p.num_output());
  DOPPIO_ENSURE(N_ > 0) << who << ": inner_product_param.num_output must be positive";
  bias_term_ = p.bias_term();
  transpose_ = p.transpose();
  const int num_axes = bottom[0]->num_axes();
  DOPPIO_ENSURE(p.axis() >= -num_axes && p.axis() < num_axes)
      << who << ": inner_product_param.axis " << p.axis() << " is out of range for input shape "
      << bottom[0]->shape_string();
  axis_ = p.axis() < 0 ? p.axis() + num_axes : p.axis();
  K_ = bottom[0]->count(axis_);
  DOPPIO_ENSURE(K_ > 0) << who << ": input " << bottom[0]->shape_string()
                        << " has no values per sample from axis " << axis_;

  const std::vector<int> weight_shape =
      transpose_ ? std::vector<int>{K_, N_} : std::vector<int>{N_, K_};
  const std::vector<int> bias_shape = {N_};
  if (!this->blobs_.empty()) {
    const size_t expected = bias_term_ ? 2 : 1;
    DOPPIO_ENSURE(this->blobs_.size() == expected)
        << who << ": has " << this->blobs_.size() << " parameter blob(s), expected " << expected;
    // Older Caffe models store the weights as 4-d (1, 1, N, K): accept any shape with the
    // right count and take the canonical one.
    DOPPIO_ENSURE(this->blobs_[0]->count() == N_ * K_)
        << who << ": weight shape " << this->blobs_[0]->shape_string()
        << " does not match the expected " << ShapeString(weight_shape);
    this->blobs_[0]->Reshape(weight_shape);
    if (bias_term_) {
      DOPPIO_ENSURE(this->blobs_[1]->count() == N_)
          << who << ": bias shape " << this->blobs_[1]->shape_string()
          << " does not match the expected " << ShapeString(bias_shape);
      this->blobs_[1]->Reshape(bias_shape);
    }
  } else {
    this->blobs_.push_back(std::make_shared<Blob<Dtype>>(weight_shape));
    GetFiller<Dtype>(p.weight_filler())->Fill(this->blobs_[0].get(), this->rng());
    if (bias_term_) {
      this->blobs_.push_back(std::make_shared<Blob<Dtype>>(bias_shape));
      GetFiller<Dtype>(p.bias_filler())->Fill(this->blobs_[1].get(), this->rng());
    }
  }
  this->param_propagate_down_.resize(this->blobs_.size(), true);
}

template <typename Dtype>
void InnerProductLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const Blob<Dtype>& in = *bottom[0];
  DOPPIO_ENSURE(axis_ < in.num_axes() && in.count(axis_) == K_)
      << this->Describe() << ": input shape " << in.shape_string() << " gives "
      << (axis_ < in.num_axes() ? in.count(axis_) : 0) << " inputs per sample from axis " << axis_
      << ", but the layer was set up for " << K_;
  M_ = in.count(0, axis_);
  std::vector<int> top_shape(in.shape().begin(), in.shape().begin() + axis_);
  top_shape.push_back(N_);
  top[0]->Reshape(top_shape);
  if (bias_term_ && bias_multiplier_.count() != M_) {
    bias_multiplier_.Reshape({M_});
    cpu_set(M_, Dtype(1), bias_multiplier_.mutable_cpu_data());
  }
}

template <typename Dtype>
void InnerProductLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (M_ == 0) return;  // an empty batch has no buffers to touch
  const Dtype* in = bottom[0]->cpu_data();
  const Dtype* weight = this->blobs_[0]->cpu_data();
  Dtype* out = top[0]->mutable_cpu_data();
  // top (M x N) = bottom (M x K) * W^T, W being N x K (or K x N when transposed).
  cpu_gemm<Dtype>(Trans::kNo, transpose_ ? Trans::kNo : Trans::kYes, M_, N_, K_, Dtype(1), in,
                  weight, Dtype(0), out);
  if (bias_term_) {
    // top += ones (M x 1) * bias (1 x N)
    cpu_gemm<Dtype>(Trans::kNo, Trans::kNo, M_, N_, 1, Dtype(1), bias_multiplier_.cpu_data(),
                    this->blobs_[1]->cpu_data(), Dtype(1), out);
  }
}

template <typename Dtype>
void InnerProductLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                            const std::vector<bool>& propagate_down,
                                            const BlobVec& bottom) {
  if (M_ == 0) return;
  const Dtype* top_diff = top[0]->cpu_diff();
  const Dtype* in = bottom[0]->cpu_data();
  if (this->param_propagate_down(0)) {
    Dtype* weight_diff = this->blobs_[0]->mutable_cpu_diff();
    if (transpose_) {
      // dW (K x N) += bottom^T (K x M) * top_diff (M x N)
      cpu_gemm<Dtype>(Trans::kYes, Trans::kNo, K_, N_, M_, Dtype(1), in, top_diff, Dtype(1),
                      weight_diff);
    } else {
      // dW (N x K) += top_diff^T (N x M) * bottom (M x K)
      cpu_gemm<Dtype>(Trans::kYes, Trans::kNo, N_, K_, M_, Dtype(1), top_diff, in, Dtype(1),
                      weight_diff);
    }
  }
  if (bias_term_ && this->param_propagate_down(1)) {
    // d bias (N) += top_diff^T (N x M) * ones (M)
    cpu_gemv<Dtype>(Trans::kYes, M_, N_, Dtype(1), top_diff, bias_multiplier_.cpu_data(), Dtype(1),
                    this->blobs_[1]->mutable_cpu_diff());
  }
  if (propagate_down[0]) {
    // bottom_diff (M x K) = top_diff (M x N) * W (N x K), or * W^T when W is K x N.
    cpu_gemm<Dtype>(Trans::kNo, transpose_ ? Trans::kYes : Trans::kNo, M_, K_, N_, Dtype(1),
                    top_diff, this->blobs_[0]->cpu_data(), Dtype(0), bottom[0]->mutable_cpu_diff());
  }
}

DOPPIO_INSTANTIATE_CLASS(InnerProductLayer);
REGISTER_LAYER_CLASS(InnerProduct);

}  // namespace doppio
