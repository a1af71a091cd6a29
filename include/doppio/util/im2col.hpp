#pragma once

namespace doppio {

// Unrolls a (channels, height, width) image into a column matrix of shape
// (channels * kernel_h * kernel_w, out_h * out_w), with
//   out = (in + 2 * pad - (dilation * (kernel - 1) + 1)) / stride + 1,
// so that convolution becomes one matrix product. Taps that fall in the zero padding read
// as 0. Every element of data_col is written; it needs no clearing beforehand.
// col_row_stride is the distance between the starts of consecutive rows of the column
// matrix (0: out_h * out_w, i.e. dense); a larger stride places several images' columns
// side by side in one wide matrix.
template <typename Dtype>
void im2col_cpu(const Dtype* data_im, int channels, int height, int width, int kernel_h,
                int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h,
                int dilation_w, Dtype* data_col, int col_row_stride = 0);

// The adjoint of im2col_cpu: sums every column entry back into the image position it was
// read from (padding taps are dropped). data_im is overwritten, not accumulated into.
template <typename Dtype>
void col2im_cpu(const Dtype* data_col, int channels, int height, int width, int kernel_h,
                int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h,
                int dilation_w, Dtype* data_im, int col_row_stride = 0);

// col2im_cpu for a column matrix that is scratch: it may clear entries of data_col (those
// that read the horizontal padding), which lets a stride-1 convolution that keeps the width
// add each tap in one long loop. The same sums, in the same order, as col2im_cpu.
template <typename Dtype>
void col2im_cpu_clobbering(Dtype* data_col, int channels, int height, int width, int kernel_h,
                           int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w,
                           int dilation_h, int dilation_w, Dtype* data_im, int col_row_stride = 0);

// Output extent of a convolution along one axis (may be <= 0 for an input that is too small).
inline int ConvOutputSize(int in, int kernel, int pad, int stride, int dilation) {
  const int extent = dilation * (kernel - 1) + 1;
  return (in + 2 * pad - extent) / stride + 1;
}

}  // namespace doppio
