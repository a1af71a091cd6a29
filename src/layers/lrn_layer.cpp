#include "doppio/layers/lrn_layer.hpp"

#include <algorithm>
#include <cmath>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/thread_pool.hpp"

namespace doppio {

namespace {

// s^-0.75 = 1 / (sqrt(s) * sqrt(sqrt(s))) and s^-0.5 = 1 / sqrt(s). The compiler will not
// vectorise std::sqrt (it must keep errno for negative input), so the x86 baseline (SSE2)
// does it explicitly.
template <bool kThreeQuarters>
void InverseRootPower(int n, const float* s, float* out) {
  int i = 0;
#if defined(__SSE2__)
  const __m128 one = _mm_set1_ps(1.f);
  for (; i + 4 <= n; i += 4) {
    const __m128 r = _mm_sqrt_ps(_mm_loadu_ps(s + i));
    const __m128 d = kThreeQuarters ? _mm_mul_ps(r, _mm_sqrt_ps(r)) : r;
    _mm_storeu_ps(out + i, _mm_div_ps(one, d));
  }
#endif
  for (; i < n; ++i) {
    const float r = std::sqrt(s[i]);
    out[i] = 1.f / (kThreeQuarters ? r * std::sqrt(r) : r);
  }
}

template <bool kThreeQuarters>
void InverseRootPower(int n, const double* s, double* out) {
  int i = 0;
#if defined(__SSE2__)
  const __m128d one = _mm_set1_pd(1.);
  for (; i + 2 <= n; i += 2) {
    const __m128d r = _mm_sqrt_pd(_mm_loadu_pd(s + i));
    const __m128d d = kThreeQuarters ? _mm_mul_pd(r, _mm_sqrt_pd(r)) : r;
    _mm_storeu_pd(out + i, _mm_div_pd(one, d));
  }
#endif
  for (; i < n; ++i) {
    const double r = std::sqrt(s[i]);
    out[i] = 1. / (kThreeQuarters ? r * std::sqrt(r) : r);
  }
}

}  // namespace

template <typename Dtype>
void LRNLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const LRNParameter& p = this->layer_param_.lrn_param();
  size_ = static_cast<int>(p.local_size());
  DOPPIO_ENSURE(size_ % 2 == 1) << this->Describe() << ": lrn_param.local_size must be odd, got "
                                << size_;
  pre_pad_ = (size_ - 1) / 2;
  alpha_ = p.alpha();
  beta_ = p.beta();
  k_ = p.k();
  region_ = p.norm_region();
}

template <typename Dtype>
void LRNLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const Blob<Dtype>& in = *bottom[0];
  DOPPIO_ENSURE(in.num_axes() == 4)
      << this->Describe() << ": input must have 4 axes (N, C, H, W), got shape "
      << in.shape_string();
  // The window reads neighbours of every element after they would have been overwritten.
  DOPPIO_ENSURE(bottom[0] != top[0])
      << this->Describe() << ": LRN cannot run in place; give the top its own name";
  num_ = in.shape(0);
  channels_ = in.shape(1);
  height_ = in.shape(2);
  width_ = in.shape(3);
  top[0]->ReshapeLike(in);
  scale_.ReshapeLike(in);
  plane_size_ = static_cast<size_t>(height_) * width_;
  image_size_ = region_ == LRNParameter::ACROSS_CHANNELS ? plane_size_ * channels_ : plane_size_;
  row_size_ = region_ == LRNParameter::WITHIN_CHANNEL ? plane_size_ : 0;
  work_size_ = plane_size_ + 2 * image_size_ + row_size_ + plane_size_ * channels_;
}

template <typename Dtype>
void LRNLayer<Dtype>::PrepareWork(int parts) {
  if (work_.size() < work_size_ * parts) work_.resize(work_size_ * parts);
}

template <typename Dtype>
typename LRNLayer<Dtype>::Work LRNLayer<Dtype>::WorkOf(int part) {
  Dtype* base = work_.data() + work_size_ * part;
  Work work;
  work.accum = base;
  work.power = work.accum + plane_size_;
  work.ratio = work.power + image_size_;
  work.row = work.ratio + image_size_;
  work.scale = work.row + row_size_;
  return work;
}

template <typename Dtype>
void LRNLayer<Dtype>::NegativePower(int n, const Dtype* s, Dtype* out) const {
  // pow() dominates the layer's cost; the usual betas have cheaper exact forms.
  if (beta_ == Dtype(0.75)) {
    InverseRootPower<true>(n, s, out);
  } else if (beta_ == Dtype(0.5)) {
    InverseRootPower<false>(n, s, out);
  } else if (beta_ == Dtype(1)) {
    for (int i = 0; i < n; ++i) out[i] = Dtype(1) / s[i];
  } else {
    for (int i = 0; i < n; ++i) out[i] = std::pow(s[i], -beta_);
  }
}

template <typename Dtype>
void LRNLayer<Dtype>::CrossChannelScale(const Dtype* in, const Work& work) {
  const int plane = height_ * width_;
  const Dtype a = alpha_ / size_;
  Dtype* acc = work.accum;
  std::fill(acc, acc + plane, Dtype(0));
  for (int j = 0; j < std::min(pre_pad_, channels_); ++j) {
    const Dtype* x = in + static_cast<size_t>(j) * plane;
    for (int i = 0; i < plane; ++i) acc[i] += x[i] * x[i];
  }
  // Slide the window of squares over the channels: add the channel entering, drop the one
  // leaving.
  for (int c = 0; c < channels_; ++c) {
    const int head = c + pre_pad_, tail = c - pre_pad_ - 1;
    if (head < channels_) {
      const Dtype* x = in + static_cast<size_t>(head) * plane;
      for (int i = 0; i < plane; ++i) acc[i] += x[i] * x[i];
    }
    if (tail >= 0) {
      const Dtype* x = in + static_cast<size_t>(tail) * plane;
      for (int i = 0; i < plane; ++i) acc[i] -= x[i] * x[i];
    }
    Dtype* s = work.scale + static_cast<size_t>(c) * plane;
    for (int i = 0; i < plane; ++i) s[i] = k_ + a * acc[i];
  }
}

template <typename Dtype>
void LRNLayer<Dtype>::CrossChannelBackward(const Dtype* in, const Dtype* top_diff,
                                           const Dtype* scale, Dtype* bottom_diff,
                                           const Work& work) {
  // With p = scale^-beta and top = x p:
  //   d loss / d x_c = top_diff_c p_c
  //                    - 2 alpha beta / n * x_c * sum over windows containing c of
  //                      top_diff_j * x_j * p_j / scale_j.
  const int plane = height_ * width_;
  const int count = channels_ * plane;
  Dtype* p = work.power;
  Dtype* ratio = work.ratio;
  NegativePower(count, scale, p);
  for (int i = 0; i < count; ++i) ratio[i] = top_diff[i] * in[i] * p[i] / scale[i];
  const Dtype factor = Dtype(2) * alpha_ * beta_ / size_;
  Dtype* acc = work.accum;
  std::fill(acc, acc + plane, Dtype(0));
  for (int j = 0; j < std::min(pre_pad_, channels_); ++j) {
    const Dtype* r = ratio + static_cast<size_t>(j) * plane;
    for (int i = 0; i < plane; ++i) acc[i] += r[i];
  }
  for (int c = 0; c < channels_; ++c) {
    const int head = c + pre_pad_, tail = c - pre_pad_ - 1;
    if (head < channels_) {
      const Dtype* r = ratio + static_cast<size_t>(head) * plane;
      for (int i = 0; i < plane; ++i) acc[i] += r[i];
    }
    if (tail >= 0) {
      const Dtype* r = ratio + static_cast<size_t>(tail) * plane;
      for (int i = 0; i < plane; ++i) acc[i] -= r[i];
    }
    const size_t offset = static_cast<size_t>(c) * plane;
    const Dtype* x = in + offset;
    const Dtype* td = top_diff + offset;
    const Dtype* pc = p + offset;
    Dtype* bd = bottom_diff + offset;
    for (int i = 0; i < plane; ++i) bd[i] = td[i] * pc[i] - factor * x[i] * acc[i];
  }
}

template <typename Dtype>
void LRNLayer<Dtype>::BoxSum(const Dtype* in, Dtype* out, Dtype* rows) {
  // Separable: sliding sums along each row, then along each column.
  for (int h = 0; h < height_; ++h) {
    const Dtype* r = in + h * width_;
    Dtype* dst = rows + h * width_;
    Dtype running = 0;
    for (int w = 0; w < std::min(pre_pad_, width_); ++w) running += r[w];
    for (int w = 0; w < width_; ++w) {
      if (w + pre_pad_ < width_) running += r[w + pre_pad_];
      if (w - pre_pad_ - 1 >= 0) running -= r[w - pre_pad_ - 1];
      dst[w] = running;
    }
  }
  Dtype* first = out;
  std::fill(first, first + width_, Dtype(0));
  for (int h = 0; h <= std::min(pre_pad_, height_ - 1); ++h) {
    const Dtype* r = rows + h * width_;
    for (int w = 0; w < width_; ++w) first[w] += r[w];
  }
  for (int h = 1; h < height_; ++h) {
    const Dtype* prev = out + (h - 1) * width_;
    Dtype* dst = out + h * width_;
    const int head = h + pre_pad_, tail = h - pre_pad_ - 1;
    const Dtype* add = head < height_ ? rows + head * width_ : nullptr;
    const Dtype* sub = tail >= 0 ? rows + tail * width_ : nullptr;
    for (int w = 0; w < width_; ++w) dst[w] = prev[w];
    if (add)
      for (int w = 0; w < width_; ++w) dst[w] += add[w];
    if (sub)
      for (int w = 0; w < width_; ++w) dst[w] -= sub[w];
  }
}

template <typename Dtype>
void LRNLayer<Dtype>::WithinChannelScale(const Dtype* in, const Work& work) {
  const int plane = height_ * width_;
  const Dtype a = alpha_ / (size_ * size_);
  Dtype* sq = work.ratio;
  Dtype* acc = work.accum;
  for (int c = 0; c < channels_; ++c) {
    const size_t offset = static_cast<size_t>(c) * plane;
    const Dtype* x = in + offset;
    for (int i = 0; i < plane; ++i) sq[i] = x[i] * x[i];
    BoxSum(sq, acc, work.row);
    Dtype* s = work.scale + offset;
    for (int i = 0; i < plane; ++i) s[i] = k_ + a * acc[i];
  }
}

template <typename Dtype>
void LRNLayer<Dtype>::WithinChannelBackward(const Dtype* in, const Dtype* top_diff,
                                            const Dtype* scale, Dtype* bottom_diff,
                                            const Work& work) {
  // As across channels, with the n x n window (symmetric, so the windows containing a
  // position are the window around it) and alpha / n^2.
  const int plane = height_ * width_;
  const Dtype factor = Dtype(2) * alpha_ * beta_ / (size_ * size_);
  Dtype* p = work.power;
  Dtype* ratio = work.ratio;
  Dtype* acc = work.accum;
  for (int c = 0; c < channels_; ++c) {
    const size_t offset = static_cast<size_t>(c) * plane;
    const Dtype* x = in + offset;
    const Dtype* td = top_diff + offset;
    const Dtype* s = scale + offset;
    Dtype* bd = bottom_diff + offset;
    NegativePower(plane, s, p);
    for (int i = 0; i < plane; ++i) ratio[i] = td[i] * x[i] * p[i] / s[i];
    BoxSum(ratio, acc, work.row);
    for (int i = 0; i < plane; ++i) bd[i] = td[i] * p[i] - factor * x[i] * acc[i];
  }
}

template <typename Dtype>
void LRNLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (top[0]->count() == 0) return;  // an empty batch has no buffers to touch
  const Dtype* in = bottom[0]->cpu_data();
  Dtype* out = top[0]->mutable_cpu_data();
  const size_t plane = static_cast<size_t>(height_) * width_;
  const size_t image = channels_ * plane;
  PrepareWork(ParallelPartsFor(num_, 1));
  ParallelFor(num_, 1, [&](int begin, int end, int part) {
    const Work work = WorkOf(part);
    for (int n = begin; n < end; ++n) {
      const size_t o = n * image;
      if (region_ == LRNParameter::ACROSS_CHANNELS) {
        CrossChannelScale(in + o, work);
      } else {
        WithinChannelScale(in + o, work);
      }
      // out = in * scale^-beta, a plane at a time.
      for (int c = 0; c < channels_; ++c) {
        const size_t offset = c * plane;
        Dtype* y = out + o + offset;
        NegativePower(static_cast<int>(plane), work.scale + offset, y);
        const Dtype* x = in + o + offset;
        for (size_t i = 0; i < plane; ++i) y[i] *= x[i];
      }
    }
  });
}

template <typename Dtype>
void LRNLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                   const BlobVec& bottom) {
  if (!propagate_down[0] || top[0]->count() == 0) return;
  const Dtype* in = bottom[0]->cpu_data();
  const Dtype* top_diff = top[0]->cpu_diff();
  Dtype* bottom_diff = bottom[0]->mutable_cpu_diff();
  const size_t image = static_cast<size_t>(channels_) * height_ * width_;
  PrepareWork(ParallelPartsFor(num_, 1));
  ParallelFor(num_, 1, [&](int begin, int end, int part) {
    const Work work = WorkOf(part);
    for (int n = begin; n < end; ++n) {
      const size_t o = n * image;
      if (region_ == LRNParameter::ACROSS_CHANNELS) {
        CrossChannelScale(in + o, work);
        CrossChannelBackward(in + o, top_diff + o, work.scale, bottom_diff + o, work);
      } else {
        WithinChannelScale(in + o, work);
        WithinChannelBackward(in + o, top_diff + o, work.scale, bottom_diff + o, work);
      }
    }
  });
}

DOPPIO_INSTANTIATE_CLASS(LRNLayer);
REGISTER_LAYER_CLASS(LRN);

}  // namespace doppio
