#pragma once

// The Data layer's crop, random-resized crop, mirror, mean and scale on the device, for
// records decoded there (nvJPEG): the same arithmetic as DataTransformer's on the host
// (data/data_transformer.cpp), on 8-bit pixels already in device memory. CUDA builds only.
#ifdef DOPPIO_WITH_CUDA

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace doppio {

class TransformationParameter;

// One record: its decoded pixels (8-bit, HWC with the transform's channels interleaved, rows
// `pitch` bytes apart, in device memory), its size, the window the output is taken from, and
// whether the output is mirrored.
struct GpuWindowJob {
  const std::uint8_t* pixels;
  long long pitch;
  int height, width;
  int x, y, w, h;
  int mirror;
};

// What every record of a batch goes through. With `resize`, the window is resized to
// out_h x out_w bilinearly with half-pixel centres, sampling clamped to the window (the
// random-resized crop); without, the window is out_h x out_w and is copied. Then
// (value - mean) * scale, the mean being `mean_image` at the source pixel (device memory,
// channels x height x width of the record; not with resize), else mean[c] (mean[0] for every
// channel when mean_values is 1, none when 0).
struct GpuWindowTransform {
  int channels = 3, out_h = 0, out_w = 0;
  bool resize = false;
  int mean_values = 0;
  float mean[4] = {0, 0, 0, 0};
  const float* mean_image = nullptr;
  float scale = 1;
};

// The transform `param` describes for records of `record_shape` ({C, H, W}); mean_image is
// left for the caller, which holds it in device memory. Up to 4 mean values, as DataTransformer.
GpuWindowTransform GpuWindowTransformFor(const TransformationParameter& param,
                                         const std::vector<int>& record_shape);

// Writes n records of channels x out_h x out_w values each to `out` (device memory), in
// order, on `stream`; `jobs` are in device memory.
template <typename Dtype>
void gpu_transform_windows(const GpuWindowTransform& transform, const GpuWindowJob* jobs, int n,
                           Dtype* out, cudaStream_t stream);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDA
