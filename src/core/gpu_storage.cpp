#include "doppio/core/gpu_storage.hpp"

#include <type_traits>

namespace doppio {

template <typename Dtype>
GpuStorage GpuStorageOf(const Layer<Dtype>& layer) {
  if (!std::is_same<Dtype, float>::value || layer.mode() != Mode::GPU) return GpuStorage::kFloat32;
  switch (layer.precision_request()) {
    case BF16:
      return GpuStorage::kBfloat16;
    case FP16:
      return GpuStorage::kFloat16;
    default:
      return GpuStorage::kFloat32;
  }
}

template GpuStorage GpuStorageOf(const Layer<float>& layer);
template GpuStorage GpuStorageOf(const Layer<double>& layer);

LayerPrecision StoragePrecision(GpuStorage storage) {
  switch (storage) {
    case GpuStorage::kBfloat16:
      return {BF16, BF16};
    case GpuStorage::kFloat16:
      return {FP16, FP16};
    case GpuStorage::kFloat32:
      break;
  }
  return {};
}

#ifdef DOPPIO_WITH_CUDA

const void* GpuStorageReader::Read(const std::shared_ptr<SyncedMemory>& source, GpuStorage storage,
                                   GpuContext& gpu) {
  if (source->gpu_storage() == storage) return source->raw_gpu_data(gpu);
  const bool fresh = source_.lock() == source && source_writes_ == source->write_count() &&
                     storage_ == storage && copy_ != nullptr;
  if (fresh) return copy_->raw_gpu_data(gpu);
  const long long count = static_cast<long long>(source->size() / sizeof(float));
  const std::size_t bytes = static_cast<std::size_t>(count) * GpuStorageBytes(storage);
  if (copy_ == nullptr || copy_->size() < bytes) copy_ = std::make_shared<SyncedMemory>(bytes);
  const void* canonical = source->gpu_data(gpu);
  // The copy is bytes only this reader reads: tagged canonical, so that no access of its
  // own ever widens it (it is sized for 16 bits).
  gpu_convert(gpu, count, GpuStorage::kFloat32, canonical, storage,
              copy_->mutable_raw_gpu_data(gpu, GpuStorage::kFloat32));
  source_ = source;
  source_writes_ = source->write_count();
  storage_ = storage;
  return copy_->raw_gpu_data(gpu);
}

#endif

}  // namespace doppio
