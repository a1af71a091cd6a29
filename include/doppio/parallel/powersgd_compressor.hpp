#pragma once

#include <cstdint>
#include <vector>

#include "doppio/parallel/gradient_compression.hpp"

namespace doppio {

// PowerSGD (Vogels, Karimireddy and Jaggi, NeurIPS 2019) on one bucket. Each matrix M
// (n x m: a parameter's shape(0) rows, the rest its columns), the rank's gradient plus its
// residual, is approximated at rank r = min(RANK, n, m) by one step of subspace iteration,
// warm-started from the previous iteration's Q:
//   P = M Q, allreduce P (with the uncompressed vectors appended), orthogonalise P's columns,
//   Q = M^T P, allreduce Q; the bucket gets P Q^T (the sum over ranks), and the residual
//   M - P Q^T / ranks (what the mean approximation missed) is added next time.
// Q, the sum over the ranks, is the same on every rank: shared state.
//
// On a GPU (powersgd_compressor.cu) the same steps run in the same order on its compute
// stream: the products on cuBLAS (gpu_gemm), the orthogonalisation as a kernel with the
// host's arithmetic (double sums, summed in another order), P and Q allreduced in device
// memory. The results are the host's within float rounding (they are not bit for bit: the
// sums of the products run in another order).
template <typename Dtype>
class PowerSgdCompressor : public BucketCompressor<Dtype> {
 public:
  PowerSgdCompressor(std::size_t count, const std::vector<BucketParam>& params, int rank,
                     std::uint64_t seed, GpuContext* gpu = nullptr);
  void Start(Dtype* bucket, Communicator* comm, const std::string& label) override;
  void Continue() override;
  void Decompress(Dtype* bucket) override;
  std::vector<Dtype> shared_state() override { return BlobValues(&q_); }
  void set_shared_state(const std::vector<Dtype>& values) override { SetBlobValues(values, &q_); }

  // Orthonormalises the `cols` columns of the row-major rows x cols matrix in place
  // (modified Gram-Schmidt); a column within rounding of the span of those before it
  // becomes zero.
  static void Orthogonalise(Dtype* matrix, int rows, int cols);
#ifdef DOPPIO_WITH_CUDA
  // The same on a device matrix, queued on gpu's compute stream.
  static void Orthogonalise_gpu(GpuContext& gpu, Dtype* matrix, int rows, int cols);
#endif

 private:
  // Where the compressor computes: P, Q and the residual on the host or on the GPU.
  Dtype* P();
  Dtype* Q();
  MemoryKind where() const { return this->gpu_ ? MemoryKind::kDevice : MemoryKind::kHost; }
  // P = M Q after M += bucket; the plain parameters appended to P.
  void Project(const Dtype* bucket);
  // Orthogonalises P (summed), then Q = M^T P.
  void ProjectBack();
  // bucket = P Q^T (both summed), residual -= bucket / ranks; the plain parameters back.
  void Reconstruct(Dtype* bucket);

  struct Matrix {
    std::size_t offset;  // in the bucket
    int rows, cols, rank;
    std::size_t p_offset, q_offset;
  };
  std::size_t count_;
  std::vector<Matrix> matrices_;
  // The parameters sent as they are: (offset, count) in the bucket.
  std::vector<std::pair<std::size_t, std::size_t>> plain_;
  std::size_t plain_count_ = 0;
  // P of every matrix, then the plain parameters.
  Blob<Dtype> p_;
  Blob<Dtype> q_;
  std::string label_;
};

}  // namespace doppio
