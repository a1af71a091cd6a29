#include "doppio/layers/inner_product_layer.hpp"

#include "doppio/core/filler.hpp"
#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/thread_pool.hpp"

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

// Forward and Backward split their products over the thread pool by output columns (N, or
// K for the bottom diff): every part computes its own columns with the whole sum, so there
// is nothing to add up across parts. A part gets at least kGrain columns.
namespace {
constexpr int kGrain = 64;
}  // namespace

template <typename Dtype>
void InnerProductLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (M_ == 0) return;  // an empty batch has no buffers to touch
  const Dtype* in = bottom[0]->cpu_data();
  const Dtype* weight = this->blobs_[0]->cpu_data();
  const Dtype* bias = bias_term_ ? this->blobs_[1]->cpu_data() : nullptr;
  const Dtype* ones = bias_term_ ? bias_multiplier_.cpu_data() : nullptr;
  Dtype* out = top[0]->mutable_cpu_data();
  ParallelFor(N_, kGrain, [&](int n0, int n1, int) {
    const int n = n1 - n0;
    // top (M x N) = bottom (M x K) * W^T, W being N x K (or K x N when transposed).
    if (transpose_) {
      cpu_gemm<Dtype>(Trans::kNo, Trans::kNo, M_, n, K_, Dtype(1), in, K_, weight + n0, N_,
                      Dtype(0), out + n0, N_);
    } else {
      cpu_gemm<Dtype>(Trans::kNo, Trans::kYes, M_, n, K_, Dtype(1), in, K_,
                      weight + static_cast<size_t>(n0) * K_, K_, Dtype(0), out + n0, N_);
    }
    // top += ones (M x 1) * bias (1 x N)
    if (bias) {
      cpu_gemm<Dtype>(Trans::kNo, Trans::kNo, M_, n, 1, Dtype(1), ones, 1, bias + n0, N_, Dtype(1),
                      out + n0, N_);
    }
  });
}

template <typename Dtype>
void InnerProductLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                            const std::vector<bool>& propagate_down,
                                            const BlobVec& bottom) {
  if (M_ == 0) return;
  const Dtype* top_diff = top[0]->cpu_diff();
  const Dtype* in = bottom[0]->cpu_data();
  Dtype* weight_diff =
      this->param_propagate_down(0) ? this->blobs_[0]->mutable_cpu_diff() : nullptr;
  Dtype* bias_diff =
      bias_term_ && this->param_propagate_down(1) ? this->blobs_[1]->mutable_cpu_diff() : nullptr;
  const Dtype* ones = bias_diff ? bias_multiplier_.cpu_data() : nullptr;
  if (weight_diff || bias_diff) {
    ParallelFor(N_, kGrain, [&](int n0, int n1, int) {
      const int n = n1 - n0;
      if (weight_diff && transpose_) {
        // dW (K x N) += bottom^T (K x M) * top_diff (M x N)
        cpu_gemm<Dtype>(Trans::kYes, Trans::kNo, K_, n, M_, Dtype(1), in, K_, top_diff + n0, N_,
                        Dtype(1), weight_diff + n0, N_);
      } else if (weight_diff) {
        // dW (N x K) += top_diff^T (N x M) * bottom (M x K)
        cpu_gemm<Dtype>(Trans::kYes, Trans::kNo, n, K_, M_, Dtype(1), top_diff + n0, N_, in, K_,
                        Dtype(1), weight_diff + static_cast<size_t>(n0) * K_, K_);
      }
      // d bias (N) += top_diff^T (N x M) * ones (M), as a product with one column.
      if (bias_diff) {
        cpu_gemm<Dtype>(Trans::kYes, Trans::kNo, n, 1, M_, Dtype(1), top_diff + n0, N_, ones, 1,
                        Dtype(1), bias_diff + n0, 1);
      }
    });
  }
  if (propagate_down[0]) {
    const Dtype* weight = this->blobs_[0]->cpu_data();
    Dtype* bottom_diff = bottom[0]->mutable_cpu_diff();
    ParallelFor(K_, kGrain, [&](int k0, int k1, int) {
      // bottom_diff (M x K) = top_diff (M x N) * W (N x K), or * W^T when W is K x N.
      if (transpose_) {
        cpu_gemm<Dtype>(Trans::kNo, Trans::kYes, M_, k1 - k0, N_, Dtype(1), top_diff, N_,
                        weight + static_cast<size_t>(k0) * N_, N_, Dtype(0), bottom_diff + k0, K_);
      } else {
        cpu_gemm<Dtype>(Trans::kNo, Trans::kNo, M_, k1 - k0, N_, Dtype(1), top_diff, N_,
                        weight + k0, K_, Dtype(0), bottom_diff + k0, K_);
      }
    });
  }
}

DOPPIO_INSTANTIATE_CLASS(InnerProductLayer);
REGISTER_LAYER_CLASS(InnerProduct);

}  // namespace doppio
