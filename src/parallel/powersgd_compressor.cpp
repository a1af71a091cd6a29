#include "doppio/parallel/powersgd_compressor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "doppio/core/common.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/rng.hpp"

namespace doppio {

template <typename Dtype>
PowerSgdCompressor<Dtype>::PowerSgdCompressor(std::size_t count,
                                              const std::vector<BucketParam>& params, int rank,
                                              std::uint64_t seed)
    : count_(count) {
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
  p_.assign(p_size + plain_count_, Dtype(0));
  // Every rank starts from the same random Q.
  q_.resize(q_size);
  Rng rng(seed);
  for (Dtype& value : q_) value = static_cast<Dtype>(rng.Gaussian(0, 1));
  this->residual_.assign(count, Dtype(0));
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
  this->handles_.clear();
  this->bytes_sent_ = 0;
  this->comm_ = comm;
  label_ = label;
  Dtype* residual = this->residual_.data();
  // The residual becomes M, the gradient plus what is still owed, until Decompress.
  for (const Matrix& matrix : matrices_) {
    const std::size_t size = static_cast<std::size_t>(matrix.rows) * matrix.cols;
    cpu_axpy(static_cast<int>(size), Dtype(1), bucket + matrix.offset, residual + matrix.offset);
    // P = M Q
    cpu_gemm(Trans::kNo, Trans::kNo, matrix.rows, matrix.rank, matrix.cols, Dtype(1),
             residual + matrix.offset, q_.data() + matrix.q_offset, Dtype(0),
             p_.data() + matrix.p_offset);
  }
  Dtype* plain = p_.data() + (p_.size() - plain_count_);
  for (const auto& [offset, count] : plain_) {
    std::copy(bucket + offset, bucket + offset + count, plain);
    plain += count;
  }
  this->Issued(comm->IAllreduce(p_.data(), p_.size(), CommTypeOf<Dtype>(), ReduceOp::kSum,
                                MemoryKind::kHost, label + " (P)"),
               p_.size() * sizeof(Dtype));
}

template <typename Dtype>
void PowerSgdCompressor<Dtype>::Continue() {
  this->Wait();
  const Dtype* residual = this->residual_.data();
  for (const Matrix& matrix : matrices_) {
    Dtype* p = p_.data() + matrix.p_offset;
    Orthogonalise(p, matrix.rows, matrix.rank);
    // Q = M^T P
    cpu_gemm(Trans::kYes, Trans::kNo, matrix.cols, matrix.rank, matrix.rows, Dtype(1),
             residual + matrix.offset, p, Dtype(0), q_.data() + matrix.q_offset);
  }
  if (q_.empty()) return;
  this->Issued(this->comm_->IAllreduce(q_.data(), q_.size(), CommTypeOf<Dtype>(), ReduceOp::kSum,
                                       MemoryKind::kHost, label_ + " (Q)"),
               q_.size() * sizeof(Dtype));
}

template <typename Dtype>
void PowerSgdCompressor<Dtype>::Decompress(Dtype* bucket) {
  Dtype* residual = this->residual_.data();
  const Dtype mean = Dtype(1) / this->comm_->size();
  for (const Matrix& matrix : matrices_) {
    const std::size_t size = static_cast<std::size_t>(matrix.rows) * matrix.cols;
    // The sum over ranks of the approximations: P (Q summed)^T.
    cpu_gemm(Trans::kNo, Trans::kYes, matrix.rows, matrix.cols, matrix.rank, Dtype(1),
             p_.data() + matrix.p_offset, q_.data() + matrix.q_offset, Dtype(0),
             bucket + matrix.offset);
    // What the mean approximation left out of this rank's M.
    cpu_axpy(static_cast<int>(size), -mean, bucket + matrix.offset, residual + matrix.offset);
  }
  const Dtype* plain = p_.data() + (p_.size() - plain_count_);
  for (const auto& [offset, count] : plain_) {
    std::copy(plain, plain + count, bucket + offset);
    plain += count;
  }
}

DOPPIO_INSTANTIATE_CLASS(PowerSgdCompressor);

}  // namespace doppio
