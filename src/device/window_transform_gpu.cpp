#include "doppio/device/window_transform_gpu.hpp"

#ifdef DOPPIO_WITH_CUDA

#include <algorithm>

#include "doppio/proto/doppio.pb.h"

namespace doppio {

GpuWindowTransform GpuWindowTransformFor(const TransformationParameter& param,
                                         const std::vector<int>& record_shape) {
  GpuWindowTransform transform;
  transform.channels = record_shape[0];
  transform.out_h = record_shape[1];
  transform.out_w = record_shape[2];
  transform.resize = param.resized_crop_size() > 0;
  transform.mean_values = std::min(param.mean_value_size(), 4);
  for (int c = 0; c < transform.mean_values; ++c) transform.mean[c] = param.mean_value(c);
  transform.scale = param.scale();
  return transform;
}

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDA
