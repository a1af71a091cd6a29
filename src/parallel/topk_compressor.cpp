#include "doppio/parallel/topk_compressor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "doppio/core/common.hpp"

namespace doppio {

namespace {

// ceil(fraction x count), at least 1; Error for a bucket that 32-bit indices cannot address.
std::size_t EntriesSent(std::size_t count, double fraction) {
  DOPPIO_ENSURE(count <= static_cast<std::size_t>(INT32_MAX))
      << "--grad_compression=topk: a bucket of " << count
      << " gradients is too large for 32-bit indices; lower --bucket_mb";
  const auto k = static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(count)));
  return std::min(count, std::max<std::size_t>(k, 1));
}

}  // namespace

template <typename Dtype>
TopKCompressor<Dtype>::TopKCompressor(std::size_t count, double fraction, GpuContext* gpu,
                                      double momentum)
    : BucketCompressor<Dtype>(gpu),
      count_(count),
      k_(EntriesSent(count, fraction)),
      // With FRACTION 1 nothing waits, so there is nothing to correct: the exchange stays the
      // allreduce's, bit for bit.
      momentum_(fraction < 1 ? static_cast<Dtype>(momentum) : Dtype(0)),
      wire_(k_ * (sizeof(std::int32_t) + sizeof(Dtype))) {
  DOPPIO_ENSURE(momentum >= 0 && momentum < 1)
      << "--grad_compression=topk: the momentum correction needs a momentum in [0, 1), not "
      << momentum;
  // The residual, then (corrected) the velocity.
  this->residual_.Reshape({static_cast<int>(corrects_momentum() ? 2 * count : count)});
  if (corrects_momentum()) last_step_.Reshape({static_cast<int>(count)});
  if (!gpu) order_.resize(count);
}

template <typename Dtype>
void TopKCompressor<Dtype>::Start(Dtype* bucket, Communicator* comm, const std::string& label) {
  this->Begin(comm);
  const std::size_t bytes = wire_.size();
  if (!gathered_ || gathered_->size() != bytes * comm->size()) {
    gathered_ = std::make_unique<SyncedMemory>(bytes * comm->size());
  }
#ifdef DOPPIO_WITH_CUDA
  if (this->gpu_) Select_gpu(bucket, static_cast<char*>(wire_.mutable_gpu_data(*this->gpu_)));
#endif
  if (!this->gpu_) {
    Dtype* residual = this->mutable_residual();
    Dtype* velocity = corrects_momentum() ? residual + count_ : nullptr;
    // The gradient the rank would send without compression (or its velocity), plus what it
    // still owes.
    if (velocity) {
      for (std::size_t i = 0; i < count_; ++i) {
        velocity[i] = momentum_ * velocity[i] + bucket[i];
        residual[i] += velocity[i];
      }
    } else {
      for (std::size_t i = 0; i < count_; ++i) residual[i] += bucket[i];
    }
    for (std::size_t i = 0; i < count_; ++i) order_[i] = static_cast<std::int32_t>(i);
    // Largest magnitude first; equal magnitudes by index, so that the choice is reproducible.
    auto larger = [residual](std::int32_t a, std::int32_t b) {
      const Dtype x = std::abs(residual[a]), y = std::abs(residual[b]);
      return x > y || (x == y && a < b);
    };
    if (k_ < count_) std::nth_element(order_.begin(), order_.begin() + k_, order_.end(), larger);
    std::sort(order_.begin(), order_.begin() + k_);
    char* message = static_cast<char*>(wire_.mutable_cpu_data());
    auto* indices = reinterpret_cast<std::int32_t*>(message);
    auto* values = reinterpret_cast<Dtype*>(message + k_ * sizeof(std::int32_t));
    for (std::size_t j = 0; j < k_; ++j) {
      const std::int32_t index = order_[j];
      indices[j] = index;
      values[j] = residual[index];
      // Sent: no longer owed.
      residual[index] = 0;
    }
  }
  // On a GPU, cpu_data copies the message to the host once the kernels are done.
  this->Issued(comm->IAllgather(wire_.cpu_data(), gathered_->mutable_cpu_data(), bytes,
                                CommType::kByte, label),
               bytes);
}

template <typename Dtype>
void TopKCompressor<Dtype>::Decompress(Dtype* bucket) {
  const int ranks = this->comm_->size();
#ifdef DOPPIO_WITH_CUDA
  if (this->gpu_) {
    Sum_gpu(static_cast<const char*>(gathered_->gpu_data(*this->gpu_)), ranks, bucket);
    return;
  }
#endif
  std::fill(bucket, bucket + count_, Dtype(0));
  const char* gathered = static_cast<const char*>(gathered_->cpu_data());
  for (int r = 0; r < ranks; ++r) {
    const char* message = gathered + r * wire_.size();
    std::int32_t index;
    Dtype value;
    for (std::size_t j = 0; j < k_; ++j) {
      std::memcpy(&index, message + j * sizeof(std::int32_t), sizeof(index));
      std::memcpy(&value, message + k_ * sizeof(std::int32_t) + j * sizeof(Dtype), sizeof(value));
      bucket[index] += value;
    }
  }
  if (!corrects_momentum()) return;
  const Dtype share = momentum_ * static_cast<Dtype>(ranks);
  Dtype* last = last_step_.mutable_cpu_data();
  for (std::size_t i = 0; i < count_; ++i) {
    const Dtype sum = bucket[i];
    bucket[i] = sum - share * last[i];
    last[i] = sum / static_cast<Dtype>(ranks);
  }
}

template <typename Dtype>
std::vector<Dtype> TopKCompressor<Dtype>::Half(int half) {
  if (half == 1 && !corrects_momentum()) return {};
  const std::vector<Dtype> both = BucketCompressor<Dtype>::residual();
  const auto begin = both.begin() + half * static_cast<std::ptrdiff_t>(count_);
  return std::vector<Dtype>(begin, begin + static_cast<std::ptrdiff_t>(count_));
}

template <typename Dtype>
void TopKCompressor<Dtype>::SetHalf(int half, const std::vector<Dtype>& values) {
  DOPPIO_ENSURE(values.size() == (half == 1 && !corrects_momentum() ? 0 : count_))
      << "top-k: " << values.size() << " values for a " << (half == 0 ? "residual" : "velocity")
      << " of " << (half == 1 && !corrects_momentum() ? 0 : count_);
  if (values.empty()) return;
  std::vector<Dtype> both = BucketCompressor<Dtype>::residual();
  std::copy(values.begin(), values.end(),
            both.begin() + half * static_cast<std::ptrdiff_t>(count_));
  BucketCompressor<Dtype>::set_residual(both);
}

template <typename Dtype>
std::vector<Dtype> TopKCompressor<Dtype>::residual() {
  return Half(0);
}

template <typename Dtype>
void TopKCompressor<Dtype>::set_residual(const std::vector<Dtype>& values) {
  SetHalf(0, values);
}

template <typename Dtype>
std::vector<Dtype> TopKCompressor<Dtype>::velocity() {
  return Half(1);
}

template <typename Dtype>
void TopKCompressor<Dtype>::set_velocity(const std::vector<Dtype>& values) {
  SetHalf(1, values);
}

template <typename Dtype>
std::vector<Dtype> TopKCompressor<Dtype>::shared_state() {
  return BlobValues(&last_step_);
}

template <typename Dtype>
void TopKCompressor<Dtype>::set_shared_state(const std::vector<Dtype>& values) {
  SetBlobValues(values, &last_step_);
}

DOPPIO_INSTANTIATE_CLASS(TopKCompressor);

}  // namespace doppio
