#pragma once

#include <cstdint>
#include <vector>

#include "doppio/parallel/gradient_compression.hpp"

namespace doppio {

// fp16 or bf16 on the wire: every rank's bucket, cast to 16 bits, is gathered by every rank
// and summed there in Dtype (float), in rank order, so that every rank gets the same sum and
// no partial sum is ever rounded to 16 bits. No state: the rounding is not fed back.
template <typename Dtype>
class CastCompressor : public BucketCompressor<Dtype> {
 public:
  CastCompressor(std::size_t count, bool bfloat16);
  void Start(Dtype* bucket, Communicator* comm, const std::string& label) override;
  void Decompress(Dtype* bucket) override;

 private:
  std::size_t count_;
  bool bfloat16_;
  std::vector<std::uint16_t> wire_;
  std::vector<std::uint16_t> gathered_;
};

}  // namespace doppio
