#include "doppio/device/cuda_kernels.cuh"
#include "doppio/device/im2col_gpu.hpp"
#include "doppio/util/im2col.hpp"

namespace doppio {

namespace {

// One thread per (channel, output row, output column): writes that position's column of
// kernel_h * kernel_w taps, rows c * kernel_h * kernel_w + i * kernel_w + j.
template <typename Dtype>
__global__ void Im2ColKernel(long long n, const Dtype* data_im, int height, int width, int kernel_h,
                             int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w,
                             int dilation_h, int dilation_w, int height_col, int width_col,
                             Dtype* data_col) {
  DOPPIO_KERNEL_LOOP(index, n) {
    const int w_col = static_cast<int>(index % width_col);
    const long long h_index = index / width_col;
    const int h_col = static_cast<int>(h_index % height_col);
    const int c_im = static_cast<int>(h_index / height_col);
    const int h_offset = h_col * stride_h - pad_h;
    const int w_offset = w_col * stride_w - pad_w;
    const long long plane_col = static_cast<long long>(height_col) * width_col;
    Dtype* col = data_col + static_cast<long long>(c_im) * kernel_h * kernel_w * plane_col +
                 static_cast<long long>(h_col) * width_col + w_col;
    const Dtype* im = data_im + static_cast<long long>(c_im) * height * width;
    for (int i = 0; i < kernel_h; ++i) {
      const int h_im = h_offset + i * dilation_h;
      for (int j = 0; j < kernel_w; ++j) {
        const int w_im = w_offset + j * dilation_w;
        *col = (h_im >= 0 && w_im >= 0 && h_im < height && w_im < width)
                   ? im[static_cast<long long>(h_im) * width + w_im]
                   : Dtype(0);
        col += plane_col;
      }
    }
  }
}

// One thread per image element: gathers every column entry read from it (no atomics).
// Tap (i, j) of output position (h_col, w_col) reads h = h_col * stride - pad + i * dilation,
// so the element at h is read by tap i exactly when h + pad - i * dilation is a non-negative
// multiple of the stride whose quotient is a valid output row (the same for w).
template <typename Dtype>
__global__ void Col2ImKernel(long long n, const Dtype* data_col, int height, int width,
                             int kernel_h, int kernel_w, int pad_h, int pad_w, int stride_h,
                             int stride_w, int dilation_h, int dilation_w, int height_col,
                             int width_col, Dtype* data_im) {
  DOPPIO_KERNEL_LOOP(index, n) {
    const int w = static_cast<int>(index % width);
    const long long h_index = index / width;
    const int h = static_cast<int>(h_index % height);
    const int c = static_cast<int>(h_index / height);
    const long long plane_col = static_cast<long long>(height_col) * width_col;
    Dtype value = 0;
    for (int i = 0; i < kernel_h; ++i) {
      const int h_k = h + pad_h - i * dilation_h;
      if (h_k < 0) break;  // only decreases with i
      if (h_k % stride_h != 0) continue;
      const int h_col = h_k / stride_h;
      if (h_col >= height_col) continue;
      for (int j = 0; j < kernel_w; ++j) {
        const int w_k = w + pad_w - j * dilation_w;
        if (w_k < 0) break;
        if (w_k % stride_w != 0) continue;
        const int w_col = w_k / stride_w;
        if (w_col >= width_col) continue;
        const long long row = (static_cast<long long>(c) * kernel_h + i) * kernel_w + j;
        value += data_col[row * plane_col + static_cast<long long>(h_col) * width_col + w_col];
      }
    }
    data_im[index] = value;
  }
}

}  // namespace

template <typename Dtype>
void im2col_gpu(GpuContext& gpu, const Dtype* data_im, int channels, int height, int width,
                int kernel_h, int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w,
                int dilation_h, int dilation_w, Dtype* data_col) {
  const int height_col = ConvOutputSize(height, kernel_h, pad_h, stride_h, dilation_h);
  const int width_col = ConvOutputSize(width, kernel_w, pad_w, stride_w, dilation_w);
  if (height_col <= 0 || width_col <= 0) return;
  const long long n = static_cast<long long>(channels) * height_col * width_col;
  LaunchKernel("Im2ColKernel", gpu, n, Im2ColKernel<Dtype>, n, data_im, height, width, kernel_h,
               kernel_w, pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w, height_col,
               width_col, data_col);
}

template <typename Dtype>
void col2im_gpu(GpuContext& gpu, const Dtype* data_col, int channels, int height, int width,
                int kernel_h, int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w,
                int dilation_h, int dilation_w, Dtype* data_im) {
  const int height_col = ConvOutputSize(height, kernel_h, pad_h, stride_h, dilation_h);
  const int width_col = ConvOutputSize(width, kernel_w, pad_w, stride_w, dilation_w);
  const long long n = static_cast<long long>(channels) * height * width;
  if (height_col <= 0 || width_col <= 0) {
    // No output position reads the image: its gradient is 0.
    if (n > 0) {
      DOPPIO_CUDA_CHECK(cudaMemsetAsync(data_im, 0, sizeof(Dtype) * n, gpu.stream()));
    }
    return;
  }
  LaunchKernel("Col2ImKernel", gpu, n, Col2ImKernel<Dtype>, n, data_col, height, width, kernel_h,
               kernel_w, pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w, height_col,
               width_col, data_im);
}

#define DOPPIO_INSTANTIATE_IM2COL_GPU(Dtype)                                                    \
  template void im2col_gpu<Dtype>(GpuContext&, const Dtype*, int, int, int, int, int, int, int, \
                                  int, int, int, int, Dtype*);                                  \
  template void col2im_gpu<Dtype>(GpuContext&, const Dtype*, int, int, int, int, int, int, int, \
                                  int, int, int, int, Dtype*);

DOPPIO_INSTANTIATE_IM2COL_GPU(float)
DOPPIO_INSTANTIATE_IM2COL_GPU(double)

}  // namespace doppio
