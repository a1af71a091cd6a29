#include "doppio/parallel/topk_compressor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "doppio/core/common.hpp"

namespace doppio {

template <typename Dtype>
TopKCompressor<Dtype>::TopKCompressor(std::size_t count, double fraction) : count_(count) {
  DOPPIO_ENSURE(count <= static_cast<std::size_t>(INT32_MAX))
      << "--grad_compression=topk: a bucket of " << count
      << " gradients is too large for 32-bit indices; lower --bucket_mb";
  k_ = static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(count)));
  k_ = std::min(count, std::max<std::size_t>(k_, 1));
  this->residual_.assign(count, Dtype(0));
  order_.resize(count);
  wire_.resize(k_ * (sizeof(std::int32_t) + sizeof(Dtype)));
}

template <typename Dtype>
void TopKCompressor<Dtype>::Start(Dtype* bucket, Communicator* comm, const std::string& label) {
  this->handles_.clear();
  this->bytes_sent_ = 0;
  this->comm_ = comm;
  Dtype* residual = this->residual_.data();
  // The gradient the rank would send without compression, plus what it still owes.
  for (std::size_t i = 0; i < count_; ++i) residual[i] += bucket[i];
  for (std::size_t i = 0; i < count_; ++i) order_[i] = static_cast<std::int32_t>(i);
  // Largest magnitude first; equal magnitudes by index, so that the choice is reproducible.
  auto larger = [residual](std::int32_t a, std::int32_t b) {
    const Dtype x = std::abs(residual[a]), y = std::abs(residual[b]);
    return x > y || (x == y && a < b);
  };
  if (k_ < count_) std::nth_element(order_.begin(), order_.begin() + k_, order_.end(), larger);
  std::sort(order_.begin(), order_.begin() + k_);
  auto* indices = reinterpret_cast<std::int32_t*>(wire_.data());
  auto* values = reinterpret_cast<Dtype*>(wire_.data() + k_ * sizeof(std::int32_t));
  for (std::size_t j = 0; j < k_; ++j) {
    const std::int32_t index = order_[j];
    indices[j] = index;
    values[j] = residual[index];
    // Sent: no longer owed.
    residual[index] = 0;
  }
  gathered_.resize(wire_.size() * comm->size());
  this->Issued(
      comm->IAllgather(wire_.data(), gathered_.data(), wire_.size(), CommType::kByte, label),
      wire_.size());
}

template <typename Dtype>
void TopKCompressor<Dtype>::Decompress(Dtype* bucket) {
  std::fill(bucket, bucket + count_, Dtype(0));
  const int ranks = this->comm_->size();
  for (int r = 0; r < ranks; ++r) {
    const char* message = gathered_.data() + r * wire_.size();
    std::int32_t index;
    Dtype value;
    for (std::size_t j = 0; j < k_; ++j) {
      std::memcpy(&index, message + j * sizeof(std::int32_t), sizeof(index));
      std::memcpy(&value, message + k_ * sizeof(std::int32_t) + j * sizeof(Dtype), sizeof(value));
      bucket[index] += value;
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(TopKCompressor);

}  // namespace doppio
