#include "doppio/device/cuda_kernels.cuh"
#include "doppio/device/window_transform_gpu.hpp"

namespace doppio {

namespace {

// One thread per output value (record, channel, row, column).
template <typename Dtype>
__global__ void TransformWindowsKernel(long long count, GpuWindowTransform t,
                                       const GpuWindowJob* jobs, Dtype* out) {
  DOPPIO_KERNEL_LOOP(index, count) {
    const int ox = static_cast<int>(index % t.out_w);
    const long long rest = index / t.out_w;
    const int oy = static_cast<int>(rest % t.out_h);
    const int c = static_cast<int>((rest / t.out_h) % t.channels);
    const GpuWindowJob job = jobs[rest / t.out_h / t.channels];
    // A mirrored output's column k is the window's column out_w - 1 - k.
    const int k = job.mirror ? t.out_w - 1 - ox : ox;
    float value;
    int sx = job.x + k, sy = job.y + oy;
    if (t.resize) {
      // As DataTransformer::ResizeWindow: the tap position in double, the blend in float.
      double ax = (k + 0.5) * job.w / t.out_w - 0.5;
      double ay = (oy + 0.5) * job.h / t.out_h - 0.5;
      ax = ax < 0 ? 0 : (ax > job.w - 1.0 ? job.w - 1.0 : ax);
      ay = ay < 0 ? 0 : (ay > job.h - 1.0 ? job.h - 1.0 : ay);
      const int x0 = static_cast<int>(ax), y0 = static_cast<int>(ay);
      const int x1 = x0 + 1 < job.w ? x0 + 1 : job.w - 1;
      const int y1 = y0 + 1 < job.h ? y0 + 1 : job.h - 1;
      const float wx = static_cast<float>(ax - x0), wy = static_cast<float>(ay - y0);
      auto at = [&](int y, int x) {
        return static_cast<float>(job.pixels[(job.y + y) * job.pitch +
                                             static_cast<long long>(job.x + x) * t.channels + c]);
      };
      const float upper = at(y0, x0) + wx * (at(y0, x1) - at(y0, x0));
      const float lower = at(y1, x0) + wx * (at(y1, x1) - at(y1, x0));
      value = upper + wy * (lower - upper);
    } else {
      value = static_cast<float>(
          job.pixels[sy * job.pitch + static_cast<long long>(sx) * t.channels + c]);
    }
    Dtype mean = 0;
    if (t.mean_image != nullptr) {
      mean = static_cast<Dtype>(
          t.mean_image[(static_cast<long long>(c) * job.height + sy) * job.width + sx]);
    } else if (t.mean_values > 0) {
      mean = static_cast<Dtype>(t.mean[t.mean_values == 1 ? 0 : c]);
    }
    out[index] = (static_cast<Dtype>(value) - mean) * static_cast<Dtype>(t.scale);
  }
}

}  // namespace

template <typename Dtype>
void gpu_transform_windows(const GpuWindowTransform& transform, const GpuWindowJob* jobs, int n,
                           Dtype* out, cudaStream_t stream) {
  const long long count =
      static_cast<long long>(n) * transform.channels * transform.out_h * transform.out_w;
  if (count <= 0) return;
  DOPPIO_LAUNCH(TransformWindowsKernel<Dtype>, GpuBlocks(count), kGpuThreads, stream)
  (count, transform, jobs, out);
  DOPPIO_CUDA_POST_KERNEL_CHECK("TransformWindowsKernel");
}

template void gpu_transform_windows<float>(const GpuWindowTransform&, const GpuWindowJob*, int,
                                           float*, cudaStream_t);
template void gpu_transform_windows<double>(const GpuWindowTransform&, const GpuWindowJob*, int,
                                            double*, cudaStream_t);

}  // namespace doppio
