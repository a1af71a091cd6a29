#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/lrn_layer.hpp"

namespace doppio {

namespace {
// s^-beta with the exact cheaper forms the CPU code uses for the common betas.
template <typename Dtype>
__device__ __forceinline__ Dtype NegativePower(Dtype s, Dtype beta) {
  if (beta == Dtype(0.75)) {
    const Dtype r = sqrt(s);
    return Dtype(1) / (r * sqrt(r));
  }
  if (beta == Dtype(0.5)) return Dtype(1) / sqrt(s);
  if (beta == Dtype(1)) return Dtype(1) / s;
  return pow(s, -beta);
}

struct LrnShape {
  int channels, height, width, size, pre_pad;
};

// ACROSS_CHANNELS: one thread per (n, h, w) slides the window of squares over the channels.
template <typename Dtype>
__global__ void CrossChannelForwardKernel(long long n, const Dtype* in, LrnShape s, Dtype k,
                                          Dtype a, Dtype beta, Dtype* scale, Dtype* out) {
  DOPPIO_KERNEL_LOOP(p, n) {
    const long long plane = static_cast<long long>(s.height) * s.width;
    const long long base = (p / plane) * s.channels * plane + p % plane;
    const Dtype* x = in + base;
    Dtype acc = 0;
    for (int j = 0; j < min(s.pre_pad, s.channels); ++j) acc += x[j * plane] * x[j * plane];
    for (int c = 0; c < s.channels; ++c) {
      const int head = c + s.pre_pad, tail = c - s.pre_pad - 1;
      if (head < s.channels) acc += x[head * plane] * x[head * plane];
      if (tail >= 0) acc -= x[tail * plane] * x[tail * plane];
      const Dtype sc = k + a * acc;
      scale[base + c * plane] = sc;
      out[base + c * plane] = x[c * plane] * NegativePower(sc, beta);
    }
  }
}

template <typename Dtype>
__global__ void CrossChannelBackwardKernel(long long n, const Dtype* in, const Dtype* top_diff,
                                           const Dtype* scale, LrnShape s, Dtype beta, Dtype factor,
                                           Dtype* bottom_diff) {
  DOPPIO_KERNEL_LOOP(p, n) {
    const long long plane = static_cast<long long>(s.height) * s.width;
    const long long base = (p / plane) * s.channels * plane + p % plane;
    const Dtype* x = in + base;
    const Dtype* td = top_diff + base;
    const Dtype* sc = scale + base;
    // ratio_j = top_diff_j * x_j * scale_j^-beta / scale_j, summed over the window.
#define DOPPIO_LRN_RATIO(j) \
  (td[(j)*plane] * x[(j)*plane] * NegativePower(sc[(j)*plane], beta) / sc[(j)*plane])
    Dtype acc = 0;
    for (int j = 0; j < min(s.pre_pad, s.channels); ++j) acc += DOPPIO_LRN_RATIO(j);
    for (int c = 0; c < s.channels; ++c) {
      const int head = c + s.pre_pad, tail = c - s.pre_pad - 1;
      if (head < s.channels) acc += DOPPIO_LRN_RATIO(head);
      if (tail >= 0) acc -= DOPPIO_LRN_RATIO(tail);
      bottom_diff[base + c * plane] =
          td[c * plane] * NegativePower(sc[c * plane], beta) - factor * x[c * plane] * acc;
    }
#undef DOPPIO_LRN_RATIO
  }
}

// The sum of `values` over the size x size window centred on (h, w) of its plane, zero padded.
template <typename Dtype>
__device__ Dtype WindowSum(const Dtype* plane_values, int h, int w, const LrnShape& s) {
  const int hstart = max(h - s.pre_pad, 0), hend = min(h + s.pre_pad + 1, s.height);
  const int wstart = max(w - s.pre_pad, 0), wend = min(w + s.pre_pad + 1, s.width);
  Dtype sum = 0;
  for (int hh = hstart; hh < hend; ++hh) {
    for (int ww = wstart; ww < wend; ++ww) sum += plane_values[hh * s.width + ww];
  }
  return sum;
}

// WITHIN_CHANNEL: one thread per element sums the squares of its window.
template <typename Dtype>
__global__ void WithinChannelForwardKernel(long long n, const Dtype* in, LrnShape s, Dtype k,
                                           Dtype a, Dtype beta, Dtype* scale, Dtype* out) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const int w = static_cast<int>(i % s.width);
    const int h = static_cast<int>((i / s.width) % s.height);
    const Dtype* x = in + (i / (static_cast<long long>(s.width) * s.height)) * s.height * s.width;
    const int hstart = max(h - s.pre_pad, 0), hend = min(h + s.pre_pad + 1, s.height);
    const int wstart = max(w - s.pre_pad, 0), wend = min(w + s.pre_pad + 1, s.width);
    Dtype sum = 0;
    for (int hh = hstart; hh < hend; ++hh) {
      for (int ww = wstart; ww < wend; ++ww) sum += x[hh * s.width + ww] * x[hh * s.width + ww];
    }
    const Dtype sc = k + a * sum;
    scale[i] = sc;
    out[i] = in[i] * NegativePower(sc, beta);
  }
}

template <typename Dtype>
__global__ void WithinChannelRatioKernel(long long n, const Dtype* in, const Dtype* top_diff,
                                         const Dtype* scale, Dtype beta, Dtype* ratio) {
  DOPPIO_KERNEL_LOOP(i, n) {
    ratio[i] = top_diff[i] * in[i] * NegativePower(scale[i], beta) / scale[i];
  }
}

template <typename Dtype>
__global__ void WithinChannelBackwardKernel(long long n, const Dtype* in, const Dtype* top_diff,
                                            const Dtype* scale, const Dtype* ratio, LrnShape s,
                                            Dtype beta, Dtype factor, Dtype* bottom_diff) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const int w = static_cast<int>(i % s.width);
    const int h = static_cast<int>((i / s.width) % s.height);
    const long long plane = (i / (static_cast<long long>(s.width) * s.height)) * s.height * s.width;
    const Dtype acc = WindowSum(ratio + plane, h, w, s);
    bottom_diff[i] = top_diff[i] * NegativePower(scale[i], beta) - factor * in[i] * acc;
  }
}
}  // namespace

template <typename Dtype>
void LRNLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (top[0]->count() == 0) return;
  GpuContext& gpu = this->gpu();
  const LrnShape s{channels_, height_, width_, size_, pre_pad_};
  const Dtype* in = bottom[0]->gpu_data(gpu);
  Dtype* out = top[0]->mutable_gpu_data(gpu);
  Dtype* scale = scale_.mutable_gpu_data(gpu);
  if (region_ == LRNParameter::ACROSS_CHANNELS) {
    const long long positions = static_cast<long long>(num_) * height_ * width_;
    LaunchKernel("CrossChannelForwardKernel", gpu, positions, CrossChannelForwardKernel<Dtype>,
                 positions, in, s, k_, alpha_ / size_, beta_, scale, out);
  } else {
    const long long count = top[0]->count();
    LaunchKernel("WithinChannelForwardKernel", gpu, count, WithinChannelForwardKernel<Dtype>, count,
                 in, s, k_, alpha_ / (size_ * size_), beta_, scale, out);
  }
}

template <typename Dtype>
void LRNLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                   const BlobVec& bottom) {
  if (!propagate_down[0] || top[0]->count() == 0) return;
  GpuContext& gpu = this->gpu();
  const LrnShape s{channels_, height_, width_, size_, pre_pad_};
  const Dtype* in = bottom[0]->gpu_data(gpu);
  const Dtype* top_diff = top[0]->gpu_diff(gpu);
  const Dtype* scale = scale_.gpu_data(gpu);
  Dtype* bottom_diff = bottom[0]->mutable_gpu_diff(gpu);
  if (region_ == LRNParameter::ACROSS_CHANNELS) {
    const long long positions = static_cast<long long>(num_) * height_ * width_;
    LaunchKernel("CrossChannelBackwardKernel", gpu, positions, CrossChannelBackwardKernel<Dtype>,
                 positions, in, top_diff, scale, s, beta_, Dtype(2) * alpha_ * beta_ / size_,
                 bottom_diff);
  } else {
    const long long count = top[0]->count();
    ratio_gpu_.ReshapeLike(*bottom[0]);
    Dtype* ratio = ratio_gpu_.mutable_gpu_data(gpu);
    LaunchKernel("WithinChannelRatioKernel", gpu, count, WithinChannelRatioKernel<Dtype>, count, in,
                 top_diff, scale, beta_, ratio);
    LaunchKernel("WithinChannelBackwardKernel", gpu, count, WithinChannelBackwardKernel<Dtype>,
                 count, in, top_diff, scale, static_cast<const Dtype*>(ratio), s, beta_,
                 Dtype(2) * alpha_ * beta_ / (size_ * size_), bottom_diff);
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(LRNLayer);

}  // namespace doppio
