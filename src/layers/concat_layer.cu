#include "doppio/core/layer_kernels.cuh"
#include "doppio/device/gpu_half.cuh"
#include "doppio/layers/concat_layer.hpp"

namespace doppio {

template <typename Dtype>
void ConcatLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (bottom.size() == 1 || top[0]->count() == 0) return;  // one bottom: shared memory
  GpuContext& gpu = this->gpu();
  const GpuStorage storage = GpuStorageOf(*this);
  input_readers_.resize(bottom.size());
  // The inputs first (a reader may convert), then the output.
  std::vector<const void*> inputs;
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    inputs.push_back(storage == GpuStorage::kFloat32
                         ? bottom[i]->data()->gpu_data(gpu)
                         : input_readers_[i].Read(bottom[i]->data(), storage, gpu));
  }
  void* top_data = top[0]->data()->mutable_raw_gpu_data(gpu, storage);
  const int top_axis = top[0]->shape(concat_axis_);
  WithStorageType<Dtype>(storage, [&](auto type) {
    using S = decltype(type);
    int offset = 0;
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      const int axis = bottom[i]->shape(concat_axis_);
      const int chunk = axis * concat_input_size_;
      if (chunk > 0) {
        const long long n = static_cast<long long>(num_concats_) * chunk;
        LaunchKernel("StridedBlockCopy", gpu, n, StridedBlockCopy<S>, n, chunk,
                     static_cast<const S*>(inputs[i]), static_cast<long long>(chunk), 0LL,
                     static_cast<S*>(top_data),
                     static_cast<long long>(top_axis) * concat_input_size_,
                     static_cast<long long>(offset) * concat_input_size_);
      }
      offset += axis;
    }
  });
}

template <typename Dtype>
void ConcatLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  if (bottom.size() == 1 || top[0]->count() == 0) return;
  GpuContext& gpu = this->gpu();
  const GpuStorage storage = GpuStorageOf(*this);
  const void* top_diff = storage == GpuStorage::kFloat32
                             ? top[0]->diff()->gpu_data(gpu)
                             : diff_reader_.Read(top[0]->diff(), storage, gpu);
  const int top_axis = top[0]->shape(concat_axis_);
  WithStorageType<Dtype>(storage, [&](auto type) {
    using S = decltype(type);
    int offset = 0;
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      const int axis = bottom[i]->shape(concat_axis_);
      const int chunk = axis * concat_input_size_;
      if (propagate_down[i] && chunk > 0) {
        const long long n = static_cast<long long>(num_concats_) * chunk;
        LaunchKernel("StridedBlockCopy", gpu, n, StridedBlockCopy<S>, n, chunk,
                     static_cast<const S*>(top_diff),
                     static_cast<long long>(top_axis) * concat_input_size_,
                     static_cast<long long>(offset) * concat_input_size_,
                     static_cast<S*>(bottom[i]->diff()->mutable_raw_gpu_data(gpu, storage)),
                     static_cast<long long>(chunk), 0LL);
      }
      offset += axis;
    }
  });
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(ConcatLayer);

}  // namespace doppio
