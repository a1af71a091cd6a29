#include "doppio/parallel/cast_compressor.hpp"

#include "doppio/core/common.hpp"
#include "doppio/util/half.hpp"

namespace doppio {

template <typename Dtype>
CastCompressor<Dtype>::CastCompressor(std::size_t count, bool bfloat16, GpuContext* gpu)
    : BucketCompressor<Dtype>(gpu),
      count_(count),
      bfloat16_(bfloat16),
      wire_(count * sizeof(std::uint16_t)) {}

template <typename Dtype>
void CastCompressor<Dtype>::Start(Dtype* bucket, Communicator* comm, const std::string& label) {
  this->Begin(comm);
  const std::size_t bytes = count_ * sizeof(std::uint16_t);
  if (!gathered_ || gathered_->size() != bytes * comm->size()) {
    gathered_ = std::make_unique<SyncedMemory>(bytes * comm->size());
  }
#ifdef DOPPIO_WITH_CUDA
  if (this->gpu_)
    Pack_gpu(bucket, static_cast<std::uint16_t*>(wire_.mutable_gpu_data(*this->gpu_)));
#endif
  if (!this->gpu_) {
    auto* wire = static_cast<std::uint16_t*>(wire_.mutable_cpu_data());
    if (bfloat16_) {
      for (std::size_t i = 0; i < count_; ++i) {
        wire[i] = FloatToBfloat16(static_cast<float>(bucket[i]));
      }
    } else {
      for (std::size_t i = 0; i < count_; ++i) wire[i] = FloatToHalf(static_cast<float>(bucket[i]));
    }
  }
  // On a GPU, cpu_data copies the packed bucket to the host once the kernels are done.
  this->Issued(comm->IAllgather(wire_.cpu_data(), gathered_->mutable_cpu_data(), bytes,
                                CommType::kByte, label),
               bytes);
}

template <typename Dtype>
void CastCompressor<Dtype>::Decompress(Dtype* bucket) {
  const int ranks = this->comm_->size();
#ifdef DOPPIO_WITH_CUDA
  if (this->gpu_) {
    Sum_gpu(static_cast<const std::uint16_t*>(gathered_->gpu_data(*this->gpu_)), ranks, bucket);
    return;
  }
#endif
  const auto* gathered = static_cast<const std::uint16_t*>(gathered_->cpu_data());
  for (std::size_t i = 0; i < count_; ++i) bucket[i] = 0;
  for (int r = 0; r < ranks; ++r) {
    const std::uint16_t* wire = gathered + r * count_;
    if (bfloat16_) {
      for (std::size_t i = 0; i < count_; ++i) bucket[i] += Bfloat16ToFloat(wire[i]);
    } else {
      for (std::size_t i = 0; i < count_; ++i) bucket[i] += HalfToFloat(wire[i]);
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(CastCompressor);

}  // namespace doppio
