#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "doppio/core/synced_memory.hpp"
#include "doppio/parallel/gradient_compression.hpp"

namespace doppio {

// fp16 or bf16 on the wire: every rank's bucket, cast to 16 bits, is gathered by every rank
// and summed there in Dtype (float), in rank order, so that every rank gets the same sum and
// no partial sum is ever rounded to 16 bits. No state: the rounding is not fed back. On a
// GPU the cast and the sum are kernels (cast_compressor.cu) with the host's conversions, so
// the sums are the host's bit for bit.
template <typename Dtype>
class CastCompressor : public BucketCompressor<Dtype> {
 public:
  CastCompressor(std::size_t count, bool bfloat16, GpuContext* gpu = nullptr);
  void Start(Dtype* bucket, Communicator* comm, const std::string& label) override;
  void Decompress(Dtype* bucket) override;

 private:
#ifdef DOPPIO_WITH_CUDA
  void Pack_gpu(const Dtype* bucket, std::uint16_t* wire);
  void Sum_gpu(const std::uint16_t* gathered, int ranks, Dtype* bucket);
#endif
  std::size_t count_;
  bool bfloat16_;
  SyncedMemory wire_;
  std::unique_ptr<SyncedMemory> gathered_;
};

}  // namespace doppio
