#include "doppio/layers/pooling_layer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/philox.hpp"
#include "doppio/util/thread_pool.hpp"

namespace doppio {

template <typename Dtype>
GpuStorage PoolingLayer<Dtype>::gpu_storage() const {
  // MAX and AVE with one top; a top mask or STOCHASTIC pooling keeps fp32.
  const bool has_16_bit_kernels = method_ != PoolingParameter::STOCHASTIC && !top_mask_;
  return has_16_bit_kernels ? GpuStorageOf(*this) : GpuStorage::kFloat32;
}

template <typename Dtype>
LayerPrecision PoolingLayer<Dtype>::precision() const {
  return StoragePrecision(gpu_storage());
}

template <typename Dtype>
void PoolingLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const std::string who = this->Describe();
  const PoolingParameter& p = this->layer_param_.pooling_param();
  method_ = p.pool();
  top_mask_ = top.size() > 1;
  global_pooling_ = p.global_pooling();
  const bool has_hw_kernel = p.has_kernel_h() || p.has_kernel_w();
  if (global_pooling_) {
    DOPPIO_ENSURE(!p.has_kernel_size() && !has_hw_kernel)
        << who << ": pooling_param.global_pooling takes the whole plane; kernel_size, kernel_h and "
        << "kernel_w must not be set";
  } else if (has_hw_kernel) {
    DOPPIO_ENSURE(!p.has_kernel_size())
        << who << ": pooling_param.kernel_size and kernel_h/kernel_w are exclusive; give one form";
    DOPPIO_ENSURE(p.has_kernel_h() && p.has_kernel_w())
        << who << ": pooling_param.kernel_h and kernel_w must be given together";
    kernel_h_ = static_cast<int>(p.kernel_h());
    kernel_w_ = static_cast<int>(p.kernel_w());
  } else {
    DOPPIO_ENSURE(p.has_kernel_size())
        << who << ": pooling_param.kernel_size (or kernel_h and kernel_w) is required";
    kernel_h_ = kernel_w_ = static_cast<int>(p.kernel_size());
  }
  if (p.has_pad_h() || p.has_pad_w()) {
    DOPPIO_ENSURE(!p.has_pad())
        << who << ": pooling_param.pad and pad_h/pad_w are exclusive; give one form";
    DOPPIO_ENSURE(p.has_pad_h() && p.has_pad_w())
        << who << ": pooling_param.pad_h and pad_w must be given together";
    pad_h_ = static_cast<int>(p.pad_h());
    pad_w_ = static_cast<int>(p.pad_w());
  } else {
    pad_h_ = pad_w_ = static_cast<int>(p.pad());
  }
  if (p.has_stride_h() || p.has_stride_w()) {
    DOPPIO_ENSURE(!p.has_stride())
        << who << ": pooling_param.stride and stride_h/stride_w are exclusive; give one form";
    DOPPIO_ENSURE(p.has_stride_h() && p.has_stride_w())
        << who << ": pooling_param.stride_h and stride_w must be given together";
    stride_h_ = static_cast<int>(p.stride_h());
    stride_w_ = static_cast<int>(p.stride_w());
  } else {
    stride_h_ = stride_w_ = static_cast<int>(p.stride());
  }
  DOPPIO_ENSURE(stride_h_ > 0 && stride_w_ > 0)
      << who << ": pooling_param stride must be positive, got " << stride_h_ << "x" << stride_w_;
  if (global_pooling_) {
    DOPPIO_ENSURE(pad_h_ == 0 && pad_w_ == 0 && stride_h_ == 1 && stride_w_ == 1)
        << who << ": pooling_param.global_pooling needs pad 0 and stride 1";
  } else {
    DOPPIO_ENSURE(kernel_h_ > 0 && kernel_w_ > 0)
        << who << ": pooling_param kernel size must be positive, got " << kernel_h_ << "x"
        << kernel_w_;
  }
  if (pad_h_ > 0 || pad_w_ > 0) {
    DOPPIO_ENSURE(method_ != PoolingParameter::STOCHASTIC)
        << who << ": pooling_param.pad is only supported for MAX and AVE pooling";
    DOPPIO_ENSURE(pad_h_ < kernel_h_ && pad_w_ < kernel_w_)
        << who << ": pooling_param pad (" << pad_h_ << "x" << pad_w_
        << ") must be smaller than the kernel (" << kernel_h_ << "x" << kernel_w_ << ")";
  }
}

template <typename Dtype>
void PoolingLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  // Runs before every Forward: messages are only built on failure.
  const Blob<Dtype>& in = *bottom[0];
  DOPPIO_ENSURE(in.num_axes() == 4)
      << this->Describe() << ": input must have 4 axes (N, C, H, W), got shape "
      << in.shape_string();
  num_ = in.shape(0);
  channels_ = in.shape(1);
  height_ = in.shape(2);
  width_ = in.shape(3);
  DOPPIO_ENSURE(height_ > 0 && width_ > 0)
      << this->Describe() << ": input " << in.shape_string() << " has an empty spatial axis";
  if (global_pooling_) {
    kernel_h_ = height_;
    kernel_w_ = width_;
  }
  DOPPIO_ENSURE(height_ + 2 * pad_h_ >= kernel_h_ && width_ + 2 * pad_w_ >= kernel_w_)
      << this->Describe() << ": kernel " << kernel_h_ << "x" << kernel_w_
      << " is larger than the padded input " << height_ + 2 * pad_h_ << "x" << width_ + 2 * pad_w_
      << " (input " << height_ << "x" << width_ << ", pad " << pad_h_ << "x" << pad_w_ << ")";
  const bool ceil = this->layer_param_.pooling_param().round_mode() == PoolingParameter::CEIL;
  const auto pooled = [ceil](int in, int pad, int kernel, int stride) {
    const int span = in + 2 * pad - kernel;
    return (ceil ? (span + stride - 1) / stride : span / stride) + 1;
  };
  pooled_height_ = pooled(height_, pad_h_, kernel_h_, stride_h_);
  pooled_width_ = pooled(width_, pad_w_, kernel_w_, stride_w_);
  if (pad_h_ > 0 || pad_w_ > 0) {
    // With padding the last window must start inside the image (or the left padding), not in
    // the right padding alone. Caffe applies the rule to both axes when either is padded.
    if ((pooled_height_ - 1) * stride_h_ >= height_ + pad_h_) --pooled_height_;
    if ((pooled_width_ - 1) * stride_w_ >= width_ + pad_w_) --pooled_width_;
  }
  for (auto* t : top) t->Reshape({num_, channels_, pooled_height_, pooled_width_});
  // MAX's vector kernel reads four outputs' windows from scratch rows (see MaxRowSse2).
  const int chunks = (pooled_width_ + 3) / 4;
  scratch_row_ = std::max(pad_w_ + width_, 4 * chunks * stride_w_ + kernel_w_) + 8;
  scratch_per_part_ =
      std::max(static_cast<size_t>(kernel_h_) * scratch_row_, static_cast<size_t>(pooled_width_));
  // AVE's divisor is the window clipped to the padded input: this is its width per column.
  ave_width_.resize(pooled_width_);
  for (int pw = 0; pw < pooled_width_; ++pw) {
    const int w0 = pw * stride_w_ - pad_w_;
    ave_width_[pw] = std::min(w0 + kernel_w_, width_ + pad_w_) - w0;
  }
}

// The outputs pw in [*lo, *hi) that read image column pw * stride + offset.
inline void PooledRange(int offset, int stride, int width, int pooled, int* lo, int* hi) {
  int first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int last = width - offset <= 0 ? 0 : (width - offset - 1) / stride + 1;
  last = std::min(last, pooled);
  *lo = std::min(first, last);
  *hi = last;
}

#if defined(__SSE2__)
// MAX pooling of output row ph of a float plane, four outputs at a time (stride_w 1 or 2),
// which runs several times faster than one window at a time. The window's image rows are
// first copied into scratch rows padded with -inf, so that every tap of every lane reads
// memory, and padding never wins (the rule is the scalar kernel's: the first maximum in the
// window's row-major order wins, a NaN beats any number, a later NaN an earlier one). The
// loop over taps goes row by row and column by column, keeping that order for every lane.
template <typename Dtype>
void PoolingLayer<Dtype>::MaxRowSse2(const float* in, int ph, float* out, int* index,
                                     float* scratch) const {
  // Locals: the stores below could otherwise alias the members and force reloads.
  const int width = width_, pad_w = pad_w_, kernel_w = kernel_w_, stride_w = stride_w_;
  const int pooled_width = pooled_width_, scratch_row = scratch_row_;
  const float lowest = -std::numeric_limits<float>::infinity();
  const int h0 = ph * stride_h_ - pad_h_;
  const int hstart = std::max(h0, 0), hend = std::min(h0 + kernel_h_, height_);
  for (int h = hstart; h < hend; ++h) {
    float* row = scratch + static_cast<size_t>(h - hstart) * scratch_row;
    std::fill(row, row + pad_w, lowest);
    std::memcpy(row + pad_w, in + h * width, sizeof(float) * width);
    std::fill(row + pad_w + width, row + scratch_row, lowest);
  }
  const __m128i lane_step = _mm_setr_epi32(0, stride_w, 2 * stride_w, 3 * stride_w);
  for (int pw = 0; pw < pooled_width; pw += 4) {
    __m128 best = _mm_set1_ps(lowest);
    __m128i best_index = _mm_set1_epi32(-1);
    for (int h = hstart; h < hend; ++h) {
      const float* row = scratch + static_cast<size_t>(h - hstart) * scratch_row + pw * stride_w;
      // Scratch column q is image column q - pad_w.
      const int base = h * width - pad_w + pw * stride_w;
      for (int kw = 0; kw < kernel_w; ++kw) {
        __m128 v;
        if (stride_w == 1) {
          v = _mm_loadu_ps(row + kw);
        } else {
          const float* even = row + (kw & ~1);
          const __m128 a = _mm_loadu_ps(even), b = _mm_loadu_ps(even + 4);
          v = kw & 1 ? _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))
                     : _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
        }
        // _mm_max_ps would drop a NaN: take v where it is greater or NaN, as the scalar kernel.
        const __m128 take = _mm_or_ps(_mm_cmpgt_ps(v, best), _mm_cmpunord_ps(v, v));
        best = _mm_or_ps(_mm_and_ps(take, v), _mm_andnot_ps(take, best));
        const __m128i take_index = _mm_castps_si128(take);
        const __m128i candidate = _mm_add_epi32(_mm_set1_epi32(base + kw), lane_step);
        best_index = _mm_or_si128(_mm_and_si128(take_index, candidate),
                                  _mm_andnot_si128(take_index, best_index));
      }
    }
    // A lane without a winner either lies wholly outside the image (possible with CEIL and
    // stride > kernel), and outputs 0, or reads only -inf, which never beat the padding's -inf:
    // there the window's first image value wins, as in the scalar kernel.
    const __m128i found = _mm_cmpgt_epi32(best_index, _mm_set1_epi32(-1));
    best = _mm_and_ps(best, _mm_castsi128_ps(found));
    if (_mm_movemask_ps(_mm_castsi128_ps(found)) != 0xf) {
      alignas(16) float values[4];
      alignas(16) int indices[4];
      _mm_store_ps(values, best);
      _mm_store_si128(reinterpret_cast<__m128i*>(indices), best_index);
      for (int j = 0; j < 4; ++j) {
        const int w0 = (pw + j) * stride_w - pad_w;
        const int wstart = std::max(w0, 0), wend = std::min(w0 + kernel_w, width);
        if (indices[j] >= 0 || hstart >= hend || wstart >= wend) continue;
        values[j] = lowest;
        indices[j] = hstart * width + wstart;
      }
      best = _mm_load_ps(values);
      best_index = _mm_load_si128(reinterpret_cast<const __m128i*>(indices));
    }
    if (pw + 4 <= pooled_width) {
      _mm_storeu_ps(out + pw, best);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(index + pw), best_index);
      continue;
    }
    alignas(16) float values[4];
    alignas(16) int indices[4];
    _mm_store_ps(values, best);
    _mm_store_si128(reinterpret_cast<__m128i*>(indices), best_index);
    for (int j = 0; pw + j < pooled_width; ++j) {
      out[pw + j] = values[j];
      index[pw + j] = indices[j];
    }
  }
}
#endif

template <typename Dtype>
void PoolingLayer<Dtype>::ForwardMax(const Dtype* in, Dtype* out, int* mask, Dtype* top_mask,
                                     int part) {
#if defined(__SSE2__)
  if constexpr (std::is_same<Dtype, float>::value) {
    if (stride_w_ == 1 || stride_w_ == 2) {
      int* index = mask ? mask : row_index_.data() + static_cast<size_t>(part) * pooled_width_;
      float* scratch = row_value_.data() + static_cast<size_t>(part) * scratch_per_part_;
      for (int ph = 0; ph < pooled_height_; ++ph) {
        int* row_index = mask ? index + ph * pooled_width_ : index;
        MaxRowSse2(in, ph, out + ph * pooled_width_, row_index, scratch);
        if (top_mask) {
          for (int pw = 0; pw < pooled_width_; ++pw) {
            top_mask[ph * pooled_width_ + pw] = static_cast<Dtype>(row_index[pw]);
          }
        }
      }
      return;
    }
  }
#endif
  for (int ph = 0; ph < pooled_height_; ++ph) {
    const int h0 = ph * stride_h_ - pad_h_;
    const int hstart = std::max(h0, 0), hend = std::min(h0 + kernel_h_, height_);
    for (int pw = 0; pw < pooled_width_; ++pw) {
      const int w0 = pw * stride_w_ - pad_w_;
      const int wstart = std::max(w0, 0), wend = std::min(w0 + kernel_w_, width_);
      Dtype best = -std::numeric_limits<Dtype>::infinity();
      int best_index = -1;
      for (int h = hstart; h < hend; ++h) {
        const Dtype* row = in + h * width_;
        for (int w = wstart; w < wend; ++w) {
          // Strictly greater: the first maximum wins ties, as in Caffe. A NaN wins (a later
          // one over an earlier one), as in PyTorch: the window outputs NaN, so the loss
          // shows it, and Backward routes the gradient to the NaN. The first value is taken
          // whatever it is, so a window of -inf outputs -inf (PyTorch's), not "no winner".
          if (best_index < 0 || row[w] > best || std::isnan(row[w])) {
            best = row[w];
            best_index = h * width_ + w;
          }
        }
      }
      const int o = ph * pooled_width_ + pw;
      // A window that lies wholly outside the image (possible with CEIL and stride > kernel)
      // has no value: it outputs 0 and passes no gradient.
      out[o] = best_index >= 0 ? best : Dtype(0);
      if (mask) mask[o] = best_index;
      if (top_mask) top_mask[o] = static_cast<Dtype>(best_index);
    }
  }
}

template <typename Dtype>
void PoolingLayer<Dtype>::ForwardAve(const Dtype* in, Dtype* out) {
  for (int ph = 0; ph < pooled_height_; ++ph) {
    const int h0 = ph * stride_h_ - pad_h_;
    const int h1 = std::min(h0 + kernel_h_, height_ + pad_h_);
    const int hstart = std::max(h0, 0), hend = std::min(h1, height_);
    for (int pw = 0; pw < pooled_width_; ++pw) {
      const int w0 = pw * stride_w_ - pad_w_;
      const int w1 = std::min(w0 + kernel_w_, width_ + pad_w_);
      const int wstart = std::max(w0, 0), wend = std::min(w1, width_);
      // The divisor counts padding but not what lies beyond it.
      const int pool_size = (h1 - h0) * (w1 - w0);
      Dtype sum = 0;
      for (int h = hstart; h < hend; ++h) {
        const Dtype* row = in + h * width_;
        for (int w = wstart; w < wend; ++w) sum += row[w];
      }
      out[ph * pooled_width_ + pw] = pool_size > 0 ? sum / pool_size : Dtype(0);
    }
  }
}

// AVE's backward runs tap by tap over a whole row of outputs: for each input row h of the
// windows of output row ph and each kernel column kw, every output pw whose window holds
// column pw * stride_w + kw - pad_w of the image passes its share to that input. The inner
// loops then have no per-window bounds.
template <typename Dtype>
void PoolingLayer<Dtype>::BackwardAve(const Dtype* top_diff, Dtype* diff, int part) {
  Dtype* share = row_value_.data() + static_cast<size_t>(part) * scratch_per_part_;
  for (int ph = 0; ph < pooled_height_; ++ph) {
    const int h0 = ph * stride_h_ - pad_h_;
    const int h1 = std::min(h0 + kernel_h_, height_ + pad_h_);
    const int hstart = std::max(h0, 0), hend = std::min(h1, height_);
    for (int pw = 0; pw < pooled_width_; ++pw) {
      const int pool_size = (h1 - h0) * ave_width_[pw];
      share[pw] = pool_size > 0 ? top_diff[ph * pooled_width_ + pw] / pool_size : Dtype(0);
    }
    for (int h = hstart; h < hend; ++h) {
      Dtype* row = diff + h * width_;
      // Kernel columns from the last: an input then takes its outputs' shares in the order
      // of pw, as a window-by-window loop adds them.
      for (int kw = kernel_w_ - 1; kw >= 0; --kw) {
        const int offset = kw - pad_w_;
        int lo, hi;
        PooledRange(offset, stride_w_, width_, pooled_width_, &lo, &hi);
        Dtype* x = row + offset;
        for (int pw = lo; pw < hi; ++pw) x[pw * stride_w_] += share[pw];
      }
    }
  }
}

template <typename Dtype>
std::uint64_t PoolingLayer<Dtype>::StochasticSeed() const {
  constexpr std::uint64_t kStochasticStream = 0x5709;
  return DeriveSeed(this->seed(), kStochasticStream);
}

template <typename Dtype>
void PoolingLayer<Dtype>::ForwardStochasticTrain(const Dtype* in, Dtype* out, int* index,
                                                 std::uint64_t seed, std::uint64_t position,
                                                 std::uint64_t first_word) {
  for (int ph = 0; ph < pooled_height_; ++ph) {
    const int hstart = ph * stride_h_, hend = std::min(hstart + kernel_h_, height_);
    for (int pw = 0; pw < pooled_width_; ++pw) {
      const int wstart = pw * stride_w_, wend = std::min(wstart + kernel_w_, width_);
      Dtype sum = 0;
      for (int h = hstart; h < hend; ++h)
        for (int w = wstart; w < wend; ++w) sum += in[h * width_ + w];
      // Sample a position with probability proportional to its activation: the first one
      // whose running sum reaches a uniform fraction of the total.
      const int o = ph * pooled_width_ + pw;
      const Dtype threshold =
          static_cast<Dtype>(UniformFromWord(SampleWord(seed, position, first_word + o))) * sum;
      int pick = -1;
      Dtype running = 0;
      for (int h = hstart; h < hend && pick < 0; ++h) {
        for (int w = wstart; w < wend; ++w) {
          running += in[h * width_ + w];
          if (running >= threshold) {
            pick = h * width_ + w;
            break;
          }
        }
      }
      // Rounding can leave the running sum just short of the threshold: take the last.
      if (pick < 0 && hend > hstart && wend > wstart) pick = (hend - 1) * width_ + wend - 1;
      out[o] = pick >= 0 ? in[pick] : Dtype(0);
      index[o] = pick;
    }
  }
}

template <typename Dtype>
void PoolingLayer<Dtype>::ForwardStochasticTest(const Dtype* in, Dtype* out) {
  for (int ph = 0; ph < pooled_height_; ++ph) {
    const int hstart = ph * stride_h_, hend = std::min(hstart + kernel_h_, height_);
    for (int pw = 0; pw < pooled_width_; ++pw) {
      const int wstart = pw * stride_w_, wend = std::min(wstart + kernel_w_, width_);
      // The expectation of the TRAIN sample: sum x * (x / sum x).
      Dtype sum = 0, sum_sq = 0;
      for (int h = hstart; h < hend; ++h) {
        for (int w = wstart; w < wend; ++w) {
          const Dtype v = in[h * width_ + w];
          sum += v;
          sum_sq += v * v;
        }
      }
      out[ph * pooled_width_ + pw] = sum > 0 ? sum_sq / sum : Dtype(0);
    }
  }
}

template <typename Dtype>
void PoolingLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (top[0]->count() == 0) return;  // an empty batch has no buffers to touch
  const Dtype* in = bottom[0]->cpu_data();
  Dtype* out = top[0]->mutable_cpu_data();
  const int in_plane = height_ * width_;
  const int out_plane = pooled_height_ * pooled_width_;
  // Sized here, not in Reshape: only these kernels use it, not oneDNN's or the GPU's, which
  // would otherwise hold an int per output for nothing (181 MiB on GoogLeNet at batch 32).
  const bool need_index = (method_ == PoolingParameter::MAX && top.size() == 1) ||
                          (method_ == PoolingParameter::STOCHASTIC && this->phase_ == TRAIN);
  if (need_index) index_.resize(static_cast<size_t>(top[0]->count()));
  switch (method_) {
    case PoolingParameter::MAX: {
      Dtype* top_mask = top.size() > 1 ? top[1]->mutable_cpu_data() : nullptr;
      int* mask = top_mask ? nullptr : index_.data();
      ForPlanes([&](int i, int part) {
        const size_t o = static_cast<size_t>(i) * out_plane;
        ForwardMax(in + static_cast<size_t>(i) * in_plane, out + o, mask ? mask + o : nullptr,
                   top_mask ? top_mask + o : nullptr, part);
      });
      break;
    }
    case PoolingParameter::AVE:
      ForPlanes([&](int i, int) {
        ForwardAve(in + static_cast<size_t>(i) * in_plane,
                   out + static_cast<size_t>(i) * out_plane);
      });
      break;
    case PoolingParameter::STOCHASTIC: {
      const std::uint64_t first = this->phase_ == TRAIN ? this->FirstSamplePosition(num_) : 0;
      const std::uint64_t seed = StochasticSeed();
      ForPlanes([&](int i, int) {
        const Dtype* plane_in = in + static_cast<size_t>(i) * in_plane;
        Dtype* plane_out = out + static_cast<size_t>(i) * out_plane;
        if (this->phase_ == TRAIN) {
          const int n = i / channels_, c = i - n * channels_;
          ForwardStochasticTrain(plane_in, plane_out,
                                 index_.data() + static_cast<size_t>(i) * out_plane, seed,
                                 first + n, static_cast<std::uint64_t>(c) * out_plane);
        } else {
          ForwardStochasticTest(plane_in, plane_out);
        }
      });
      break;
    }
    default:
      DOPPIO_FAIL() << this->Describe() << ": unknown pooling_param.pool " << method_;
  }
}

template <typename Dtype>
void PoolingLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                       const BlobVec& bottom) {
  if (!propagate_down[0] || top[0]->count() == 0) return;
  const Dtype* top_diff = top[0]->cpu_diff();
  Dtype* bottom_diff = bottom[0]->mutable_cpu_diff();
  const int in_plane = height_ * width_;
  const int out_plane = pooled_height_ * pooled_width_;
  const bool routed = method_ == PoolingParameter::MAX ||
                      (method_ == PoolingParameter::STOCHASTIC && this->phase_ == TRAIN);
  if (routed) {
    // Each output's gradient goes to the one input it copied.
    const Dtype* top_mask =
        method_ == PoolingParameter::MAX && top.size() > 1 ? top[1]->cpu_data() : nullptr;
    ForPlanes([&](int i, int) {
      const size_t o0 = static_cast<size_t>(i) * out_plane;
      Dtype* diff = bottom_diff + static_cast<size_t>(i) * in_plane;
      std::memset(diff, 0, sizeof(Dtype) * in_plane);
      for (int o = 0; o < out_plane; ++o) {
        const int index = top_mask ? static_cast<int>(top_mask[o0 + o]) : index_[o0 + o];
        if (index >= 0) diff[index] += top_diff[o0 + o];
      }
    });
    return;
  }
  if (method_ == PoolingParameter::AVE) {
    ForPlanes([&](int i, int part) {
      Dtype* diff = bottom_diff + static_cast<size_t>(i) * in_plane;
      std::memset(diff, 0, sizeof(Dtype) * in_plane);
      BackwardAve(top_diff + static_cast<size_t>(i) * out_plane, diff, part);
    });
    return;
  }
  const int planes = num_ * channels_;
  cpu_set(bottom[0]->count(), Dtype(0), bottom_diff);
  const Dtype* bottom_data = bottom[0]->cpu_data();
  for (int i = 0; i < planes; ++i) {
    const Dtype* in = bottom_data + static_cast<size_t>(i) * in_plane;
    const Dtype* tdiff = top_diff + static_cast<size_t>(i) * out_plane;
    Dtype* diff = bottom_diff + static_cast<size_t>(i) * in_plane;
    for (int ph = 0; ph < pooled_height_; ++ph) {
      for (int pw = 0; pw < pooled_width_; ++pw) {
        const Dtype g = tdiff[ph * pooled_width_ + pw];
        // STOCHASTIC in TEST: top = Q / S with S = sum x, Q = sum x^2, so
        // d top / d x = (2 x S - Q) / S^2.
        const int hstart = ph * stride_h_, hend = std::min(hstart + kernel_h_, height_);
        const int wstart = pw * stride_w_, wend = std::min(wstart + kernel_w_, width_);
        Dtype sum = 0, sum_sq = 0;
        for (int h = hstart; h < hend; ++h) {
          for (int w = wstart; w < wend; ++w) {
            const Dtype v = in[h * width_ + w];
            sum += v;
            sum_sq += v * v;
          }
        }
        if (sum <= 0) continue;
        const Dtype scale = g / (sum * sum);
        for (int h = hstart; h < hend; ++h)
          for (int w = wstart; w < wend; ++w)
            diff[h * width_ + w] += scale * (2 * in[h * width_ + w] * sum - sum_sq);
      }
    }
  }
}

template <typename Dtype>
template <typename Fn>
void PoolingLayer<Dtype>::ForPlanes(const Fn& fn) {
  // A plane is a few thousand operations at most; eight of them are worth a thread.
  constexpr int kGrain = 8;
  const int planes = num_ * channels_;
  // Every part has its scratch values and a row of indices.
  const size_t parts = ParallelPartsFor(planes, kGrain);
  if (row_value_.size() < parts * scratch_per_part_) row_value_.resize(parts * scratch_per_part_);
  if (row_index_.size() < parts * pooled_width_) row_index_.resize(parts * pooled_width_);
  ParallelFor(planes, kGrain, [&](int begin, int end, int part) {
    for (int i = begin; i < end; ++i) fn(i, part);
  });
}

DOPPIO_INSTANTIATE_CLASS(PoolingLayer);
REGISTER_LAYER_CLASS(Pooling);

}  // namespace doppio
