#include "doppio/parallel/powersgd_compressor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "doppio/core/common.hpp"
#include "doppio/core/device_math.hpp"
#include "doppio/device/gpu_math.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/rng.hpp"

namespace doppio {

namespace {

// cpu_gemm, or gpu_gemm on `gpu`'s compute stream.
template <typename Dtype>
void Gemm(GpuContext* gpu, Trans trans_a, Trans trans_b, int m, int n, int k, const Dtype* a,
          const Dtype* b, Dtype* c) {
#ifdef DOPPIO_WITH_CUDA
  if (gpu) return gpu_gemm(*gpu, trans_a, trans_b, m, n, k, Dtype(1), a, b, Dtype(0), c);
#endif
  cpu_gemm(trans_a, trans_b, m, n, k, Dtype(1), a, b, Dtype(0), c);
}

}  // namespace

template <typename Dtype>
PowerSgdCompressor<Dtype>::PowerSgdCompressor(std::size_t count,
                                              const std::vector<BucketParam>& params, int rank,
                                              std::uint64_t seed, GpuContext* gpu)
    : BucketCompressor<Dtype>(gpu), count_(count) {
  std::size_t p_size = 0, q_size = 0;
  for (const BucketParam& param : params) {
    const std::size_t cols = param.rows > 0 ? param.count / param.rows : 0;
    if (param.rows < 2 || cols < 2) {
      plain_.emplace_back(param.offset, param.count);
      plain_count_ += param.count;
      continue;
    }
    Matrix matrix;
    matrix.offset = param.offset;
    matrix.rows = param.rows;
    matrix.cols = static_cast<int>(cols);
    matrix.rank = std::min({rank, matrix.rows, matrix.cols});
    matrix.p_offset = p_size;
    matrix.q_offset = q_size;
    p_size += static_cast<std::size_t>(matrix.rows) * matrix.rank;
    q_size += static_cast<std::size_t>(matrix.cols) * matrix.rank;
    matrices_.push_back(matrix);
  }
  p_.Reshape({static_cast<int>(p_size + plain_count_)});
  // Every rank starts from the same random Q (drawn on the host, on a GPU too).
  q_.Reshape({static_cast<int>(q_size)});
  Rng rng(seed);
  std::vector<Dtype> q(q_size);
  for (Dtype& value : q) value = static_cast<Dtype>(rng.Gaussian(0, 1));
  SetBlobValues(q, &q_);
  this->residual_.Reshape({static_cast<int>(count)});
}

template <typename Dtype>
Dtype* PowerSgdCompressor<Dtype>::P() {
#ifdef DOPPIO_WITH_CUDA
  if (this->gpu_) return p_.mutable_gpu_data(*this->gpu_);
#endif
  return p_.mutable_cpu_data();
}

template <typename Dtype>
Dtype* PowerSgdCompressor<Dtype>::Q() {
#ifdef DOPPIO_WITH_CUDA
  if (this->gpu_) return q_.mutable_gpu_data(*this->gpu_);
#endif
  return q_.mutable_cpu_data();
}

template <typename Dtype>
void PowerSgdCompressor<Dtype>::Orthogonalise(Dtype* matrix, int rows, int cols) {
  auto norm_of = [&](int j) {
    double sum = 0;
    for (int r = 0; r < rows; ++r) sum += double(matrix[r * cols + j]) * matrix[r * cols + j];
    return std::sqrt(sum);
  };
  // What is left of a column within rounding of the span of those before it is noise, not a
  // direction of its own.
  const double rounding = 64 * std::numeric_limits<Dtype>::epsilon();
  for (int j = 0; j < cols; ++j) {
    const double before = norm_of(j);
    for (int i = 0; i < j; ++i) {
      double dot = 0;
      for (int r = 0; r < rows; ++r) dot += double(matrix[r * cols + i]) * matrix[r * cols + j];
      for (int r = 0; r < rows; ++r) {
        matrix[r * cols + j] -= static_cast<Dtype>(dot) * matrix[r * cols + i];
      }
    }
    const double norm = norm_of(j);
    const Dtype scale =
        norm > rounding * before && norm > 0 ? static_cast<Dtype>(1 / norm) : Dtype(0);
    for (int r = 0; r < rows; ++r) matrix[r * cols + j] *= scale;
  }
}

template <typename Dtype>
void PowerSgdCompressor<Dtype>::Start(Dtype* bucket, Communicator* comm, const std::string& label) {
  this->Begin(comm);
  label_ = label;
  Project(bucket);
  this->Issued(comm->IAllreduce(P(), p_.count(), CommTypeOf<Dtype>(), ReduceOp::kSum, where(),
                                label + " (P)"),
               p_.count() * sizeof(Dtype));
}

template <typename Dtype>
void PowerSgdCompressor<Dtype>::Continue() {
  this->Wait();
  // The summed P is in device memory; with NCCL the compute stream must wait for it.
  if (this->gpu_) this->comm_->JoinDeviceWork();
  ProjectBack();
  if (q_.count() == 0) return;
  this->Issued(this->comm_->IAllreduce(Q(), q_.count(), CommTypeOf<Dtype>(), ReduceOp::kSum,
                                       where(), label_ + " (Q)"),
               q_.count() * sizeof(Dtype));
}

template <typename Dtype>
void PowerSgdCompressor<Dtype>::Decompress(Dtype* bucket) {
  if (this->gpu_) this->comm_->JoinDeviceWork();
  Reconstruct(bucket);
}

template <typename Dtype>
void PowerSgdCompressor<Dtype>::Project(const Dtype* bucket) {
  const DeviceMath<Dtype> math(this->gpu_);
  Dtype* residual = this->mutable_residual();
  Dtype* p = P();
  const Dtype* q = Q();
  // The residual becomes M, the gradient plus what is still owed, until Reconstruct.
  for (const Matrix& matrix : matrices_) {
    const int size = matrix.rows * matrix.cols;
    math.axpy(size, Dtype(1), bucket + matrix.offset, residual + matrix.offset);
    // P = M Q
    Gemm(this->gpu_, Trans::kNo, Trans::kNo, matrix.rows, matrix.rank, matrix.cols,
         residual + matrix.offset, q + matrix.q_offset, p + matrix.p_offset);
  }
  Dtype* plain = p + (p_.count() - plain_count_);
  for (const auto& [offset, count] : plain_) {
    math.copy(static_cast<int>(count), bucket + offset, plain);
    plain += count;
  }
}

template <typename Dtype>
void PowerSgdCompressor<Dtype>::ProjectBack() {
  const Dtype* residual = this->mutable_residual();
  Dtype* p = P();
  Dtype* q = Q();
  for (const Matrix& matrix : matrices_) {
    Dtype* p_matrix = p + matrix.p_offset;
#ifdef DOPPIO_WITH_CUDA
    if (this->gpu_) Orthogonalise_gpu(*this->gpu_, p_matrix, matrix.rows, matrix.rank);
#endif
    if (!this->gpu_) Orthogonalise(p_matrix, matrix.rows, matrix.rank);
    // Q = M^T P
    Gemm(this->gpu_, Trans::kYes, Trans::kNo, matrix.cols, matrix.rank, matrix.rows,
         residual + matrix.offset, p_matrix, q + matrix.q_offset);
  }
}

template <typename Dtype>
void PowerSgdCompressor<Dtype>::Reconstruct(Dtype* bucket) {
  const DeviceMath<Dtype> math(this->gpu_);
  Dtype* residual = this->mutable_residual();
  const Dtype* p = P();
  const Dtype* q = Q();
  const Dtype mean = Dtype(1) / this->comm_->size();
  for (const Matrix& matrix : matrices_) {
    // The sum over ranks of the approximations: P (Q summed)^T.
    Gemm(this->gpu_, Trans::kNo, Trans::kYes, matrix.rows, matrix.cols, matrix.rank,
         p + matrix.p_offset, q + matrix.q_offset, bucket + matrix.offset);
    // What the mean approximation left out of this rank's M.
    math.axpy(matrix.rows * matrix.cols, -mean, bucket + matrix.offset, residual + matrix.offset);
  }
  const Dtype* plain = p + (p_.count() - plain_count_);
  for (const auto& [offset, count] : plain_) {
    math.copy(static_cast<int>(count), plain, bucket + offset);
    plain += count;
  }
}

DOPPIO_INSTANTIATE_CLASS(PowerSgdCompressor);

}  // namespace doppio
