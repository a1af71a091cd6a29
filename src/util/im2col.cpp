#include "doppio/util/im2col.hpp"

#include <algorithm>
#include <cstring>

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

}  // namespace

template <typename Dtype>
void im2col_cpu(const Dtype* data_im, int channels, int height, int width, int kernel_h,
                int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h,
                int dilation_w, Dtype* data_col) {
  const int out_h = ConvOutputSize(height, kernel_h, pad_h, stride_h, dilation_h);
  const int out_w = ConvOutputSize(width, kernel_w, pad_w, stride_w, dilation_w);
  const int plane = height * width;
  const int col_plane = out_h * out_w;
  for (int c = 0; c < channels; ++c, data_im += plane) {
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
        const int n = ow_hi - ow_lo;
        for (int oh = oh_lo; oh < oh_hi; ++oh) {
          Dtype* dst = data_col + oh * out_w;
          const Dtype* src = data_im + (oh * stride_h + h_off) * width;
          Zero(dst, ow_lo);
          if (stride_w == 1) {
            std::memcpy(dst + ow_lo, src + ow_lo + w_off, sizeof(Dtype) * n);
          } else {
            for (int ow = ow_lo; ow < ow_hi; ++ow) dst[ow] = src[ow * stride_w + w_off];
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
                int dilation_w, Dtype* data_im) {
  const int out_h = ConvOutputSize(height, kernel_h, pad_h, stride_h, dilation_h);
  const int out_w = ConvOutputSize(width, kernel_w, pad_w, stride_w, dilation_w);
  const int plane = height * width;
  const int col_plane = out_h * out_w;
  Zero(data_im, channels * plane);
  for (int c = 0; c < channels; ++c, data_im += plane) {
    for (int ki = 0; ki < kernel_h; ++ki) {
      const int h_off = ki * dilation_h - pad_h;
      int oh_lo, oh_hi;
      ValidRange(h_off, stride_h, height, out_h, &oh_lo, &oh_hi);
      for (int kj = 0; kj < kernel_w; ++kj, data_col += col_plane) {
        const int w_off = kj * dilation_w - pad_w;
        int ow_lo, ow_hi;
        ValidRange(w_off, stride_w, width, out_w, &ow_lo, &ow_hi);
        for (int oh = oh_lo; oh < oh_hi; ++oh) {
          const Dtype* src = data_col + oh * out_w;
          Dtype* dst = data_im + (oh * stride_h + h_off) * width;
          if (stride_w == 1) {
            Dtype* d = dst + ow_lo + w_off;
            const Dtype* s = src + ow_lo;
            for (int i = 0; i < ow_hi - ow_lo; ++i) d[i] += s[i];
          } else {
            for (int ow = ow_lo; ow < ow_hi; ++ow) dst[ow * stride_w + w_off] += src[ow];
          }
        }
      }
    }
  }
}

template void im2col_cpu<float>(const float*, int, int, int, int, int, int, int, int, int, int, int,
                                float*);
template void im2col_cpu<double>(const double*, int, int, int, int, int, int, int, int, int, int,
                                 int, double*);
template void col2im_cpu<float>(const float*, int, int, int, int, int, int, int, int, int, int, int,
                                float*);
template void col2im_cpu<double>(const double*, int, int, int, int, int, int, int, int, int, int,
                                 int, double*);

}  // namespace doppio
