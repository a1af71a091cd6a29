#include "doppio/layers/softmax_layer.hpp"

#include <algorithm>
#include <cmath>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void SoftmaxLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const int axes = bottom[0]->num_axes();
  const int axis = this->layer_param_.softmax_param().axis();
  DOPPIO_ENSURE(axis >= -axes && axis < axes)
      << this->Describe() << ": softmax_param.axis " << axis << " is out of range for bottom "
      << bottom[0]->shape_string();
  const int canonical = axis < 0 ? axis + axes : axis;
  outer_num_ = bottom[0]->count(0, canonical);
  channels_ = bottom[0]->shape(canonical);
  inner_num_ = bottom[0]->count(canonical + 1);
  top[0]->ReshapeLike(*bottom[0]);
  scale_.Reshape(std::vector<int>{inner_num_});
}

template <typename Dtype>
void SoftmaxLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const Dtype* in = bottom[0]->cpu_data();
  Dtype* out = top[0]->mutable_cpu_data();
  Dtype* scale = scale_.mutable_cpu_data();
  const int inner = inner_num_;
  const int dim = channels_ * inner;
  if (channels_ == 0) return;
  if (inner == 1) {
    // Classifier outputs (N x C): each row is one contiguous distribution.
    for (int i = 0; i < outer_num_; ++i) {
      const Dtype* x = in + i * dim;
      Dtype* y = out + i * dim;
      const Dtype max = *std::max_element(x, x + dim);
      Dtype sum = 0;
      for (int c = 0; c < dim; ++c) {
        y[c] = std::exp(x[c] - max);
        sum += y[c];
      }
      const Dtype inv = Dtype(1) / sum;
      for (int c = 0; c < dim; ++c) y[c] *= inv;
    }
    return;
  }
  for (int i = 0; i < outer_num_; ++i) {
    const Dtype* x = in + i * dim;
    Dtype* y = out + i * dim;
    // Subtracting the per-position max keeps exp() from overflowing.
    std::copy(x, x + inner, scale);
    for (int c = 1; c < channels_; ++c) {
      const Dtype* xc = x + c * inner;
      for (int k = 0; k < inner; ++k) scale[k] = std::max(scale[k], xc[k]);
    }
    for (int c = 0; c < channels_; ++c) {
      const Dtype* xc = x + c * inner;
      Dtype* yc = y + c * inner;
      for (int k = 0; k < inner; ++k) yc[k] = std::exp(xc[k] - scale[k]);
    }
    std::fill(scale, scale + inner, Dtype(0));
    for (int c = 0; c < channels_; ++c) {
      const Dtype* yc = y + c * inner;
      for (int k = 0; k < inner; ++k) scale[k] += yc[k];
    }
    for (int k = 0; k < inner; ++k) scale[k] = Dtype(1) / scale[k];
    for (int c = 0; c < channels_; ++c) {
      Dtype* yc = y + c * inner;
      for (int k = 0; k < inner; ++k) yc[k] *= scale[k];
    }
  }
}

template <typename Dtype>
void SoftmaxLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                       const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const Dtype* top_diff = top[0]->cpu_diff();
  const Dtype* top_data = top[0]->cpu_data();
  Dtype* bottom_diff = bottom[0]->mutable_cpu_diff();
  Dtype* dot = scale_.mutable_cpu_data();
  const int inner = inner_num_;
  const int dim = channels_ * inner;
  // dx = (dy - <dy, y>) * y, with the dot product over the softmax axis. The dot is taken
  // before any write, so bottom_diff may alias top_diff (in-place).
  if (inner == 1) {
    for (int i = 0; i < outer_num_; ++i) {
      const Dtype* dy = top_diff + i * dim;
      const Dtype* y = top_data + i * dim;
      Dtype* dx = bottom_diff + i * dim;
      Dtype d = 0;
      for (int c = 0; c < dim; ++c) d += dy[c] * y[c];
      for (int c = 0; c < dim; ++c) dx[c] = (dy[c] - d) * y[c];
    }
    return;
  }
  for (int i = 0; i < outer_num_; ++i) {
    const Dtype* dy = top_diff + i * dim;
    const Dtype* y = top_data + i * dim;
    Dtype* dx = bottom_diff + i * dim;
    std::fill(dot, dot + inner, Dtype(0));
    for (int c = 0; c < channels_; ++c) {
      for (int k = 0; k < inner; ++k) dot[k] += dy[c * inner + k] * y[c * inner + k];
    }
    for (int c = 0; c < channels_; ++c) {
      for (int k = 0; k < inner; ++k) {
        const int idx = c * inner + k;
        dx[idx] = (dy[idx] - dot[k]) * y[idx];
      }
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(SoftmaxLayer);
REGISTER_LAYER_CLASS(Softmax);

}  // namespace doppio
