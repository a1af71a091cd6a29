#include "doppio/parallel/cast_compressor.hpp"

#include "doppio/core/common.hpp"
#include "doppio/util/half.hpp"

namespace doppio {

template <typename Dtype>
CastCompressor<Dtype>::CastCompressor(std::size_t count, bool bfloat16)
    : count_(count), bfloat16_(bfloat16), wire_(count) {}

template <typename Dtype>
void CastCompressor<Dtype>::Start(Dtype* bucket, Communicator* comm, const std::string& label) {
  this->handles_.clear();
  this->bytes_sent_ = 0;
  this->comm_ = comm;
  if (bfloat16_) {
    for (std::size_t i = 0; i < count_; ++i) {
      wire_[i] = FloatToBfloat16(static_cast<float>(bucket[i]));
    }
  } else {
    for (std::size_t i = 0; i < count_; ++i) wire_[i] = FloatToHalf(static_cast<float>(bucket[i]));
  }
  gathered_.resize(count_ * comm->size());
  const std::size_t bytes = count_ * sizeof(std::uint16_t);
  this->Issued(comm->IAllgather(wire_.data(), gathered_.data(), bytes, CommType::kByte, label),
               bytes);
}

template <typename Dtype>
void CastCompressor<Dtype>::Decompress(Dtype* bucket) {
  const int ranks = this->comm_->size();
  for (std::size_t i = 0; i < count_; ++i) bucket[i] = 0;
  for (int r = 0; r < ranks; ++r) {
    const std::uint16_t* wire = gathered_.data() + r * count_;
    if (bfloat16_) {
      for (std::size_t i = 0; i < count_; ++i) bucket[i] += Bfloat16ToFloat(wire[i]);
    } else {
      for (std::size_t i = 0; i < count_; ++i) bucket[i] += HalfToFloat(wire[i]);
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(CastCompressor);

}  // namespace doppio
