#include "doppio/util/im2col.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace doppio {

namespace {

// The outputs o in [*lo, *hi) whose input index o * stride + offset lies in [0, extent).
// Computing the range once per kernel tap keeps the inner loops free of bounds tests.
inline void ValidRange(int offset, int stride, int extent, int out, int* lo, int* hi) {
  int first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int last = extent - offset <= 0 ? 0 : (extent - offset - 1) / stride + 1;
  last = std::min(last, out);
  first = std::min(first, last);
  *lo = first;
  *hi = last;
}

template <typename Dtype>
inline void Zero(Dtype* p, int n) {
  if (n > 0) std::memset(p, 0, sizeof(Dtype) * n);
}

// A per-thread work buffer that only grows, so steady-state calls do not allocate.
template <typename Dtype>
Dtype* Scratch(size_t n) {
  thread_local std::vector<Dtype> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// With a horizontal stride s > 1 the taps of a row read every s-th input. Splitting each
// plane once into its s column phases (phase r holds columns r, r + s, r + 2s, ...) turns
// every tap's read into a contiguous copy: input column ow * s + w_off is element
// ow + floor(w_off / s) of phase w_off mod s. Worth it when each input is read by several
// taps (kernel_w > stride_w); otherwise the plain strided loop touches less memory.
struct PhaseLayout {
  int phases;  // stride_w, or 1 when not split
  int width;   // row length of one phase plane
  bool split;
};

inline PhaseLayout ChoosePhases(int width, int kernel_w, int stride_w) {
  if (stride_w > 1 && kernel_w > stride_w) {
    return {stride_w, (width + stride_w - 1) / stride_w, true};
  }
  return {1, width, false};
}

template <typename Dtype>
void SplitPhases(const Dtype* plane, int height, int width, const PhaseLayout& layout,
                 Dtype* phases) {
  const int s = layout.phases;
  for (int r = 0; r < s; ++r) {
    Dtype* q = phases + static_cast<size_t>(r) * height * layout.width;
    const int n = (width - r + s - 1) / s;  // columns of the image in this phase
    for (int h = 0; h < height; ++h) {
      const Dtype* row = plane + h * width + r;
      Dtype* dst = q + h * layout.width;
      for (int j = 0; j < n; ++j) dst[j] = row[j * s];
    }
  }
}

template <typename Dtype>
void MergePhases(const Dtype* phases, int height, int width, const PhaseLayout& layout,
                 Dtype* plane) {
  const int s = layout.phases;
  for (int r = 0; r < s; ++r) {
    const Dtype* q = phases + static_cast<size_t>(r) * height * layout.width;
    const int n = (width - r + s - 1) / s;
    for (int h = 0; h < height; ++h) {
      Dtype* row = plane + h * width + r;
      const Dtype* src = q + h * layout.width;
      for (int j = 0; j < n; ++j) row[j * s] = src[j];
    }
  }
}

// Floor division and the matching non-negative remainder.
inline void DivMod(int a, int b, int* q, int* r) {
  *q = a >= 0 ? a / b : -((-a + b - 1) / b);
  *r = a - *q * b;
}

}  // namespace

template <typename Dtype>
void im2col_cpu(const Dtype* data_im, int channels, int height, int width, int kernel_h,
                int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h,
                int dilation_w, Dtype* data_col, int col_row_stride) {
  const int out_h = ConvOutputSize(height, kernel_h, pad_h, stride_h, dilation_h);
  const int out_w = ConvOutputSize(width, kernel_w, pad_w, stride_w, dilation_w);
  const int plane = height * width;
  const int col_plane = col_row_stride > 0 ? col_row_stride : out_h * out_w;
  const PhaseLayout layout = ChoosePhases(width, kernel_w, stride_w);
  const size_t phase_plane = static_cast<size_t>(height) * layout.width;
  Dtype* phases = layout.split ? Scratch<Dtype>(phase_plane * layout.phases) : nullptr;
  for (int c = 0; c < channels; ++c, data_im += plane) {
    if (layout.split) SplitPhases(data_im, height, width, layout, phases);
    for (int ki = 0; ki < kernel_h; ++ki) {
      const int h_off = ki * dilation_h - pad_h;
      int oh_lo, oh_hi;
      ValidRange(h_off, stride_h, height, out_h, &oh_lo, &oh_hi);
      for (int kj = 0; kj < kernel_w; ++kj, data_col += col_plane) {
        const int w_off = kj * dilation_w - pad_w;
        int ow_lo, ow_hi;
        ValidRange(w_off, stride_w, width, out_w, &ow_lo, &ow_hi);
        // Rows above and below the image are padding.
        Zero(data_col, oh_lo * out_w);
        Zero(data_col + oh_hi * out_w, (out_h - oh_hi) * out_w);
        // Where this tap reads: a plane with rows of src_width, at element ow + shift.
        const Dtype* src_plane = data_im;
        int src_width = width, shift = w_off, step = stride_w;
        if (layout.split) {
          int phase;
          DivMod(w_off, stride_w, &shift, &phase);
          src_plane = phases + phase * phase_plane;
          src_width = layout.width;
          step = 1;
        }
        const int n = ow_hi - ow_lo;
        if (step == 1 && stride_h == 1 && src_width == out_w && oh_hi > oh_lo) {
          // Input and output rows have the same length ("same" padding, stride 1), so the
          // tap's whole window is one contiguous copy; the few entries per row that wrapped
          // around from the neighbouring input row are then reset to the padding's zeros.
          Dtype* dst = data_col + oh_lo * out_w;
          const Dtype* src = src_plane + (oh_lo + h_off) * src_width + shift;
          const int span = (oh_hi - oh_lo - 1) * out_w + ow_hi;
          std::memcpy(dst + ow_lo, src + ow_lo, sizeof(Dtype) * (span - ow_lo));
          for (int oh = oh_lo; oh < oh_hi; ++oh) {
            Dtype* row = data_col + oh * out_w;
            for (int ow = 0; ow < ow_lo; ++ow) row[ow] = Dtype(0);
            for (int ow = ow_hi; ow < out_w; ++ow) row[ow] = Dtype(0);
          }
          continue;
        }
        for (int oh = oh_lo; oh < oh_hi; ++oh) {
          Dtype* dst = data_col + oh * out_w;
          const Dtype* src = src_plane + (oh * stride_h + h_off) * src_width;
          Zero(dst, ow_lo);
          if (step == 1) {
            std::memcpy(dst + ow_lo, src + ow_lo + shift, sizeof(Dtype) * n);
          } else {
            for (int ow = ow_lo; ow < ow_hi; ++ow) dst[ow] = src[ow * step + shift];
          }
          Zero(dst + ow_hi, out_w - ow_hi);
        }
      }
    }
  }
}

template <typename Dtype>
void col2im_cpu(const Dtype* data_col, int channels, int height, int width, int kernel_h,
                int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h,
                int dilation_w, Dtype* data_im, int col_row_stride) {
  const int out_h = ConvOutputSize(height, kernel_h, pad_h, stride_h, dilation_h);
  const int out_w = ConvOutputSize(width, kernel_w, pad_w, stride_w, dilation_w);
  const int plane = height * width;
  const int col_plane = col_row_stride > 0 ? col_row_stride : out_h * out_w;
  const PhaseLayout layout = ChoosePhases(width, kernel_w, stride_w);
  const size_t phase_plane = static_cast<size_t>(height) * layout.width;
  Dtype* phases = layout.split ? Scratch<Dtype>(phase_plane * layout.phases) : nullptr;
  // Accumulates into the phase planes, merged back per channel; the merge writes every
  // image element, so only the unsplit path clears the image.
  if (!layout.split) Zero(data_im, channels * plane);
  for (int c = 0; c < channels; ++c, data_im += plane) {
    if (layout.split) Zero(phases, static_cast<int>(phase_plane * layout.phases));
    for (int ki = 0; ki < kernel_h; ++ki) {
      const int h_off = ki * dilation_h - pad_h;
      int oh_lo, oh_hi;
      ValidRange(h_off, stride_h, height, out_h, &oh_lo, &oh_hi);
      for (int kj = 0; kj < kernel_w; ++kj, data_col += col_plane) {
        const int w_off = kj * dilation_w - pad_w;
        int ow_lo, ow_hi;
        ValidRange(w_off, stride_w, width, out_w, &ow_lo, &ow_hi);
        Dtype* dst_plane = data_im;
        int dst_width = width, shift = w_off, step = stride_w;
        if (layout.split) {
          int phase;
          DivMod(w_off, stride_w, &shift, &phase);
          dst_plane = phases + phase * phase_plane;
          dst_width = layout.width;
          step = 1;
        }
        for (int oh = oh_lo; oh < oh_hi; ++oh) {
          const Dtype* src = data_col + oh * out_w;
          Dtype* dst = dst_plane + (oh * stride_h + h_off) * dst_width;
          if (step == 1) {
            Dtype* __restrict d = dst + ow_lo + shift;
            const Dtype* __restrict s = src + ow_lo;
            for (int i = 0; i < ow_hi - ow_lo; ++i) d[i] += s[i];
          } else {
            for (int ow = ow_lo; ow < ow_hi; ++ow) dst[ow * step + shift] += src[ow];
          }
        }
      }
    }
    if (layout.split) MergePhases(phases, height, width, layout, data_im);
  }
}

template <typename Dtype>
void col2im_cpu_clobbering(Dtype* data_col, int channels, int height, int width, int kernel_h,
                           int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w,
                           int dilation_h, int dilation_w, Dtype* data_im, int col_row_stride) {
  const int out_h = ConvOutputSize(height, kernel_h, pad_h, stride_h, dilation_h);
  const int out_w = ConvOutputSize(width, kernel_w, pad_w, stride_w, dilation_w);
  if (stride_h != 1 || stride_w != 1 || out_w != width) {
    col2im_cpu(data_col, channels, height, width, kernel_h, kernel_w, pad_h, pad_w, stride_h,
               stride_w, dilation_h, dilation_w, data_im, col_row_stride);
    return;
  }
  // Stride 1 with outputs as wide as the input ("same" width): a tap's column entry for
  // output position i adds to image position i + offset, one offset for the whole tap. So
  // each tap is one long loop over its rows, once the entries that read the horizontal
  // padding (and would wrap into the neighbouring row) are cleared in the column matrix.
  // Every image value takes its taps' entries in the same order as in col2im_cpu.
  const int plane = height * width;
  const int row_stride = col_row_stride > 0 ? col_row_stride : out_h * out_w;
  Zero(data_im, channels * plane);
  Dtype* tap = data_col;
  for (int c = 0; c < channels; ++c, data_im += plane) {
    for (int ki = 0; ki < kernel_h; ++ki) {
      const int h_off = ki * dilation_h - pad_h;
      const int oh_lo = std::max(0, -h_off), oh_hi = std::min(out_h, height - h_off);
      for (int kj = 0; kj < kernel_w; ++kj, tap += row_stride) {
        const int w_off = kj * dilation_w - pad_w;
        const int ow_lo = std::max(0, -w_off), ow_hi = std::min(out_w, width - w_off);
        if (oh_lo >= oh_hi || ow_lo >= ow_hi) continue;
        for (int oh = oh_lo; oh < oh_hi; ++oh) {
          Dtype* row = tap + oh * out_w;
          for (int ow = 0; ow < ow_lo; ++ow) row[ow] = Dtype(0);
          for (int ow = ow_hi; ow < out_w; ++ow) row[ow] = Dtype(0);
        }
        const int begin = oh_lo * out_w + ow_lo, end = (oh_hi - 1) * out_w + ow_hi;
        Dtype* __restrict dst = data_im + (begin + h_off * width + w_off);
        const Dtype* __restrict src = tap + begin;
        for (int i = 0; i < end - begin; ++i) dst[i] += src[i];
      }
    }
  }
}

template void im2col_cpu<float>(const float*, int, int, int, int, int, int, int, int, int, int, int,
                                float*, int);
template void im2col_cpu<double>(const double*, int, int, int, int, int, int, int, int, int, int,
                                 int, double*, int);
template void col2im_cpu<float>(const float*, int, int, int, int, int, int, int, int, int, int, int,
                                float*, int);
template void col2im_cpu<double>(const double*, int, int, int, int, int, int, int, int, int, int,
                                 int, double*, int);
template void col2im_cpu_clobbering<float>(float*, int, int, int, int, int, int, int, int, int, int,
                                           int, float*, int);
template void col2im_cpu_clobbering<double>(double*, int, int, int, int, int, int, int, int, int,
                                            int, int, double*, int);

}  // namespace doppio
