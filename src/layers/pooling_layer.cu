#include <glog/logging.h>

#include <cfloat>

#include "doppio/core/gpu_storage.hpp"
#include "doppio/core/layer_kernels.cuh"
#include "doppio/device/gpu_half.cuh"
#include "doppio/layers/pooling_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
struct PoolShape {
  int channels, height, width, pooled_height, pooled_width;
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
};

// Splits an output index into (plane, ph, pw).
__device__ __forceinline__ void SplitOutput(long long index, const PoolShape& s, long long* plane,
                                            int* ph, int* pw) {
  *pw = static_cast<int>(index % s.pooled_width);
  *ph = static_cast<int>((index / s.pooled_width) % s.pooled_height);
  *plane = index / (static_cast<long long>(s.pooled_width) * s.pooled_height);
}

// S: the storage of in and out (Dtype, or 16 bits under BF16/FP16); the math is Dtype's.
template <typename S, typename Dtype>
__global__ void MaxPoolForward(long long n, const S* in, PoolShape s, S* out, int* mask,
                               Dtype* top_mask) {
  DOPPIO_KERNEL_LOOP(index, n) {
    long long plane;
    int ph, pw;
    SplitOutput(index, s, &plane, &ph, &pw);
    const int h0 = ph * s.stride_h - s.pad_h;
    const int w0 = pw * s.stride_w - s.pad_w;
    const int hstart = max(h0, 0), hend = min(h0 + s.kernel_h, s.height);
    const int wstart = max(w0, 0), wend = min(w0 + s.kernel_w, s.width);
    const S* x = in + plane * s.height * s.width;
    Dtype best = -INFINITY;
    int best_index = -1;
    for (int h = hstart; h < hend; ++h) {
      for (int w = wstart; w < wend; ++w) {
        // The CPU's rule: the first value, then strictly greater (the first maximum wins
        // ties), or NaN (a later NaN over an earlier one, as in PyTorch), so a NaN reaches the
        // output and a window of -inf outputs -inf.
        const Dtype value = Load(x[h * s.width + w]);
        if (best_index < 0 || value > best || isnan(value)) {
          best = value;
          best_index = h * s.width + w;
        }
      }
    }
    out[index] = StoreAs<S>::From(best_index >= 0 ? best : Dtype(0));
    if (mask) mask[index] = best_index;
    if (top_mask) top_mask[index] = static_cast<Dtype>(best_index);
  }
}

template <typename S, typename Dtype>
__global__ void AvePoolForward(long long n, const S* in, PoolShape s, S* out) {
  DOPPIO_KERNEL_LOOP(index, n) {
    long long plane;
    int ph, pw;
    SplitOutput(index, s, &plane, &ph, &pw);
    const int h0 = ph * s.stride_h - s.pad_h;
    const int w0 = pw * s.stride_w - s.pad_w;
    const int h1 = min(h0 + s.kernel_h, s.height + s.pad_h);
    const int w1 = min(w0 + s.kernel_w, s.width + s.pad_w);
    // The divisor counts padding but not what lies beyond it.
    const int pool_size = (h1 - h0) * (w1 - w0);
    const int hstart = max(h0, 0), hend = min(h1, s.height);
    const int wstart = max(w0, 0), wend = min(w1, s.width);
    const S* x = in + plane * s.height * s.width;
    Dtype sum = 0;
    for (int h = hstart; h < hend; ++h) {
      for (int w = wstart; w < wend; ++w) sum += Load(x[h * s.width + w]);
    }
    out[index] = StoreAs<S>::From(pool_size > 0 ? sum / pool_size : Dtype(0));
  }
}

template <typename Dtype>
__global__ void StochasticPoolForwardTrain(long long n, const Dtype* in, PoolShape s,
                                           unsigned long long seed, unsigned long long first,
                                           Dtype* out, int* picked) {
  DOPPIO_KERNEL_LOOP(index, n) {
    long long plane;
    int ph, pw;
    SplitOutput(index, s, &plane, &ph, &pw);
    const int hstart = ph * s.stride_h, hend = min(hstart + s.kernel_h, s.height);
    const int wstart = pw * s.stride_w, wend = min(wstart + s.kernel_w, s.width);
    const Dtype* x = in + plane * s.height * s.width;
    Dtype sum = 0;
    for (int h = hstart; h < hend; ++h) {
      for (int w = wstart; w < wend; ++w) sum += x[h * s.width + w];
    }
    // The first position whose running sum reaches a uniform fraction of the total.
    // The draw of PoolingLayer::ForwardStochasticTrain: word o of the sample, o the
    // output's index within its sample.
    const long long per_sample =
        static_cast<long long>(s.channels) * s.pooled_height * s.pooled_width;
    const long long sample = index / per_sample;
    const Dtype threshold = static_cast<Dtype>(UniformFromWord(SampleWord(
                                seed, first + static_cast<unsigned long long>(sample),
                                static_cast<unsigned long long>(index - sample * per_sample)))) *
                            sum;
    int pick = -1;
    Dtype running = 0;
    for (int h = hstart; h < hend && pick < 0; ++h) {
      for (int w = wstart; w < wend; ++w) {
        running += x[h * s.width + w];
        if (running >= threshold) {
          pick = h * s.width + w;
          break;
        }
      }
    }
    if (pick < 0 && hend > hstart && wend > wstart) pick = (hend - 1) * s.width + wend - 1;
    out[index] = pick >= 0 ? x[pick] : Dtype(0);
    picked[index] = pick;
  }
}

template <typename Dtype>
__global__ void StochasticPoolForwardTest(long long n, const Dtype* in, PoolShape s, Dtype* out) {
  DOPPIO_KERNEL_LOOP(index, n) {
    long long plane;
    int ph, pw;
    SplitOutput(index, s, &plane, &ph, &pw);
    const int hstart = ph * s.stride_h, hend = min(hstart + s.kernel_h, s.height);
    const int wstart = pw * s.stride_w, wend = min(wstart + s.kernel_w, s.width);
    const Dtype* x = in + plane * s.height * s.width;
    Dtype sum = 0, sum_sq = 0;
    for (int h = hstart; h < hend; ++h) {
      for (int w = wstart; w < wend; ++w) {
        const Dtype v = x[h * s.width + w];
        sum += v;
        sum_sq += v * v;
      }
    }
    out[index] = sum > 0 ? sum_sq / sum : Dtype(0);
  }
}

// The pooled outputs whose windows hold input row h (the same rule for columns):
// ph * stride - pad <= h < ph * stride - pad + kernel.
__device__ __forceinline__ void WindowsHolding(int h, int pad, int kernel, int stride, int pooled,
                                               int* first, int* end) {
  const int shifted = h + pad;
  *first = shifted < kernel ? 0 : (shifted - kernel) / stride + 1;
  *end = min(shifted / stride + 1, pooled);
}

// MAX and STOCHASTIC TRAIN: one thread per input element gathers the outputs that copied it.
template <typename S, typename Dtype>
__global__ void RoutedPoolBackward(long long n, const S* top_diff, const int* mask,
                                   const Dtype* top_mask, PoolShape s, S* bottom_diff) {
  DOPPIO_KERNEL_LOOP(index, n) {
    const int w = static_cast<int>(index % s.width);
    const int h = static_cast<int>((index / s.width) % s.height);
    const long long plane = index / (static_cast<long long>(s.width) * s.height);
    int phstart, phend, pwstart, pwend;
    WindowsHolding(h, s.pad_h, s.kernel_h, s.stride_h, s.pooled_height, &phstart, &phend);
    WindowsHolding(w, s.pad_w, s.kernel_w, s.stride_w, s.pooled_width, &pwstart, &pwend);
    const long long offset = plane * s.pooled_height * s.pooled_width;
    const int me = h * s.width + w;
    Dtype gradient = 0;
    for (int ph = phstart; ph < phend; ++ph) {
      for (int pw = pwstart; pw < pwend; ++pw) {
        const long long o = offset + ph * s.pooled_width + pw;
        const int routed = top_mask ? static_cast<int>(top_mask[o]) : mask[o];
        if (routed == me) gradient += Load(top_diff[o]);
      }
    }
    bottom_diff[index] = StoreAs<S>::From(gradient);
  }
}

template <typename S, typename Dtype>
__global__ void AvePoolBackward(long long n, const S* top_diff, PoolShape s, S* bottom_diff) {
  DOPPIO_KERNEL_LOOP(index, n) {
    const int w = static_cast<int>(index % s.width);
    const int h = static_cast<int>((index / s.width) % s.height);
    const long long plane = index / (static_cast<long long>(s.width) * s.height);
    int phstart, phend, pwstart, pwend;
    WindowsHolding(h, s.pad_h, s.kernel_h, s.stride_h, s.pooled_height, &phstart, &phend);
    WindowsHolding(w, s.pad_w, s.kernel_w, s.stride_w, s.pooled_width, &pwstart, &pwend);
    const long long offset = plane * s.pooled_height * s.pooled_width;
    Dtype gradient = 0;
    for (int ph = phstart; ph < phend; ++ph) {
      const int h0 = ph * s.stride_h - s.pad_h;
      const int h1 = min(h0 + s.kernel_h, s.height + s.pad_h);
      for (int pw = pwstart; pw < pwend; ++pw) {
        const int w0 = pw * s.stride_w - s.pad_w;
        const int w1 = min(w0 + s.kernel_w, s.width + s.pad_w);
        const int pool_size = (h1 - h0) * (w1 - w0);
        if (pool_size <= 0) continue;
        gradient += Load(top_diff[offset + ph * s.pooled_width + pw]) / pool_size;
      }
    }
    bottom_diff[index] = StoreAs<S>::From(gradient);
  }
}

// STOCHASTIC TEST: top = Q / S over the window, so d top / d x = (2 x S - Q) / S^2.
template <typename Dtype>
__global__ void StochasticPoolBackwardTest(long long n, const Dtype* in, const Dtype* top_diff,
                                           PoolShape s, Dtype* bottom_diff) {
  DOPPIO_KERNEL_LOOP(index, n) {
    const int w = static_cast<int>(index % s.width);
    const int h = static_cast<int>((index / s.width) % s.height);
    const long long plane = index / (static_cast<long long>(s.width) * s.height);
    int phstart, phend, pwstart, pwend;
    WindowsHolding(h, 0, s.kernel_h, s.stride_h, s.pooled_height, &phstart, &phend);
    WindowsHolding(w, 0, s.kernel_w, s.stride_w, s.pooled_width, &pwstart, &pwend);
    const Dtype* x = in + plane * s.height * s.width;
    const long long offset = plane * s.pooled_height * s.pooled_width;
    const Dtype me = x[h * s.width + w];
    Dtype gradient = 0;
    for (int ph = phstart; ph < phend; ++ph) {
      const int hstart = ph * s.stride_h, hend = min(hstart + s.kernel_h, s.height);
      for (int pw = pwstart; pw < pwend; ++pw) {
        const int wstart = pw * s.stride_w, wend = min(wstart + s.kernel_w, s.width);
        Dtype sum = 0, sum_sq = 0;
        for (int hh = hstart; hh < hend; ++hh) {
          for (int ww = wstart; ww < wend; ++ww) {
            const Dtype v = x[hh * s.width + ww];
            sum += v;
            sum_sq += v * v;
          }
        }
        if (sum <= 0) continue;
        const Dtype g = top_diff[offset + ph * s.pooled_width + pw];
        gradient += g / (sum * sum) * (2 * me * sum - sum_sq);
      }
    }
    bottom_diff[index] = gradient;
  }
}
}  // namespace

template <typename Dtype>
void PoolingLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  const long long count = top[0]->count();
  if (count == 0) return;
  GpuContext& gpu = this->gpu();
  const PoolShape s{channels_, height_,   width_,    pooled_height_, pooled_width_, kernel_h_,
                    kernel_w_, stride_h_, stride_w_, pad_h_,         pad_w_};
  const std::size_t index_bytes = sizeof(int) * static_cast<std::size_t>(count);
  const auto index_buffer = [&]() {
    if (!index_gpu_ || index_gpu_->size() < index_bytes) {
      index_gpu_ = std::make_shared<SyncedMemory>(index_bytes);
    }
    return static_cast<int*>(index_gpu_->mutable_gpu_data(gpu));
  };
  const GpuStorage storage = gpu_storage();
  if (method_ != PoolingParameter::STOCHASTIC) {
    WithStorageType<Dtype>(storage, [&](auto type) {
      using S = decltype(type);
      const auto* in = static_cast<const S*>(input_reader_.Read(bottom[0]->data(), storage, gpu));
      auto* out = static_cast<S*>(top[0]->data()->mutable_raw_gpu_data(gpu, storage));
      if (method_ == PoolingParameter::AVE) {
        LaunchKernel("AvePoolForward", gpu, count, AvePoolForward<S, Dtype>, count, in, s, out);
        return;
      }
      DOPPIO_ENSURE(method_ == PoolingParameter::MAX)
          << this->Describe() << ": unknown pooling_param.pool " << method_;
      Dtype* top_mask = top.size() > 1 ? top[1]->mutable_gpu_data(gpu) : nullptr;
      int* mask = top_mask ? nullptr : index_buffer();
      LaunchKernel("MaxPoolForward", gpu, count, MaxPoolForward<S, Dtype>, count, in, s, out, mask,
                   top_mask);
    });
    return;
  }
  const Dtype* in = bottom[0]->gpu_data(gpu);
  Dtype* out = top[0]->mutable_gpu_data(gpu);
  if (this->phase_ == TRAIN) {
    const std::uint64_t first = this->FirstSamplePosition(num_);
    LaunchKernel("StochasticPoolForwardTrain", gpu, count, StochasticPoolForwardTrain<Dtype>, count,
                 in, s, static_cast<unsigned long long>(StochasticSeed()),
                 static_cast<unsigned long long>(first), out, index_buffer());
  } else {
    LaunchKernel("StochasticPoolForwardTest", gpu, count, StochasticPoolForwardTest<Dtype>, count,
                 in, s, out);
  }
}

template <typename Dtype>
void PoolingLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                       const BlobVec& bottom) {
  if (!propagate_down[0] || top[0]->count() == 0) return;
  GpuContext& gpu = this->gpu();
  const PoolShape s{channels_, height_,   width_,    pooled_height_, pooled_width_, kernel_h_,
                    kernel_w_, stride_h_, stride_w_, pad_h_,         pad_w_};
  const long long count = bottom[0]->count();
  if (method_ == PoolingParameter::STOCHASTIC && this->phase_ != TRAIN) {
    LaunchKernel("StochasticPoolBackwardTest", gpu, count, StochasticPoolBackwardTest<Dtype>, count,
                 bottom[0]->gpu_data(gpu), top[0]->gpu_diff(gpu), s,
                 bottom[0]->mutable_gpu_diff(gpu));
    return;
  }
  const GpuStorage storage = gpu_storage();
  WithStorageType<Dtype>(storage, [&](auto type) {
    using S = decltype(type);
    const auto* top_diff = static_cast<const S*>(diff_reader_.Read(top[0]->diff(), storage, gpu));
    auto* bottom_diff = static_cast<S*>(bottom[0]->diff()->mutable_raw_gpu_data(gpu, storage));
    if (method_ == PoolingParameter::AVE) {
      LaunchKernel("AvePoolBackward", gpu, count, AvePoolBackward<S, Dtype>, count, top_diff, s,
                   bottom_diff);
      return;
    }
    // MAX, and STOCHASTIC in training: the gradient goes where the forward took its value.
    const Dtype* top_mask =
        method_ == PoolingParameter::MAX && top.size() > 1 ? top[1]->gpu_data(gpu) : nullptr;
    const int* mask = nullptr;
    if (!top_mask) {
      CHECK(index_gpu_) << this->Describe() << ": Backward_gpu without a Forward_gpu";
      mask = static_cast<const int*>(index_gpu_->gpu_data(gpu));
    }
    LaunchKernel("RoutedPoolBackward", gpu, count, RoutedPoolBackward<S, Dtype>, count, top_diff,
                 mask, top_mask, s, bottom_diff);
  });
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(PoolingLayer);

}  // namespace doppio
