#pragma once

// util/im2col.hpp's im2col and col2im on device memory (CUDA builds only).
#ifdef DOPPIO_WITH_CUDA

#include "doppio/device/gpu_context.hpp"

namespace doppio {

// The same two on device memory (dense column matrix), queued on gpu.stream().
template <typename Dtype>
void im2col_gpu(GpuContext& gpu, const Dtype* data_im, int channels, int height, int width,
                int kernel_h, int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w,
                int dilation_h, int dilation_w, Dtype* data_col);
template <typename Dtype>
void col2im_gpu(GpuContext& gpu, const Dtype* data_col, int channels, int height, int width,
                int kernel_h, int kernel_w, int pad_h, int pad_w, int stride_h, int stride_w,
                int dilation_h, int dilation_w, Dtype* data_im);

}  // namespace doppio

#endif
