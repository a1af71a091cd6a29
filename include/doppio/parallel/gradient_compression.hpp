#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "doppio/core/blob.hpp"
#include "doppio/device/gpu_context.hpp"
#include "doppio/parallel/communicator.hpp"

namespace doppio {

// What --grad_compression puts on the wire for each gradient bucket.
//   none:              the gradients as they are (an allreduce)
//   fp16, bf16:        cast to 16 bits for the wire, summed in float on arrival (an allgather)
//   topk:FRACTION:     each rank's largest-magnitude FRACTION of the bucket, values and
//                      indices (an allgather), with error feedback
//   powersgd:RANK:     rank-RANK PowerSGD (Vogels et al. 2019) of every matrix (a parameter
//                      of two axes or more, viewed as shape(0) rows), two allreduces per
//                      bucket, with error feedback; vectors travel uncompressed
struct GradCompression {
  enum class Method { kNone, kFp16, kBf16, kTopK, kPowerSgd };
  Method method = Method::kNone;
  double fraction = 1;  // topk
  int rank = 0;         // powersgd
  // The flag's value in its one canonical form: "topk:0.01" for "topk:.01" or "topk:1e-2",
  // which is how snapshots name the method.
  std::string text = "none";

  bool active() const { return method != Method::kNone; }
  // Whether the method carries state from one iteration to the next (residuals, PowerSGD's Q).
  bool stateful() const { return method == Method::kTopK || method == Method::kPowerSgd; }
};

// Throws Error naming --grad_compression for an unknown method or a bad FRACTION or RANK.
// The result's text is the canonical form.
GradCompression ParseGradCompression(const std::string& value);

// One parameter of a bucket, as the compressor sees it.
struct BucketParam {
  std::size_t offset = 0;  // in elements, from the bucket's start
  std::size_t count = 0;
  int rows = 0;  // shape(0) when the parameter has two axes or more (PowerSGD's matrix), else 0
};

// Exchanges one gradient bucket in a compressed form: the sum over the ranks of what every
// rank contributes (after error feedback, what it sent) replaces the bucket, as an
// allreduce's would. The calls, in this order, once per iteration:
//   Start:      compresses the bucket (adding the residual) and issues the first collective;
//   Continue:   (PowerSGD) waits for it (when no Wait came first) and issues the second;
//               the others do nothing;
//   Wait:       waits for the last collective;
//   Decompress: writes the sum into the bucket.
// The bucket must stay untouched between Start and Decompress. Every rank issues the same
// collectives in the same order.
//
// Given a GpuContext the bucket is in that GPU's memory and the compressor's kernels (the
// .cu twin of each compressor, the same algorithm) run on its compute stream: allgathers go
// through host memory (the packed bucket is copied to the host after the kernels that
// write it), PowerSGD's allreduces take the device buffers as they are (the communicator
// stages them or hands them to NCCL). The state (residual, shared state) lives where the
// compressor computes; the accessors copy it to and from the host.
template <typename Dtype>
class BucketCompressor {
 public:
  virtual ~BucketCompressor() = default;
  virtual void Start(Dtype* bucket, Communicator* comm, const std::string& label) = 0;
  virtual void Continue() {}
  void Wait();
  virtual void Decompress(Dtype* bucket) = 0;

  // The collectives of this iteration, and the bytes this rank contributed to them.
  const std::vector<CommHandle>& handles() const { return handles_; }
  std::size_t bytes_sent() const { return bytes_sent_; }

  // Error feedback: what this rank has not sent yet (empty for methods without).
  virtual std::vector<Dtype> residual();
  // `values` must have the length residual() has.
  virtual void set_residual(const std::vector<Dtype>& values);
  // Top-k's velocity, its momentum correction's own per-rank state (empty for the others).
  virtual std::vector<Dtype> velocity() { return {}; }
  virtual void set_velocity(const std::vector<Dtype>& values) {}
  // State the ranks share (PowerSGD's Q), empty for methods without.
  virtual std::vector<Dtype> shared_state() { return {}; }
  virtual void set_shared_state(const std::vector<Dtype>& values) {}

 protected:
  // gpu null: host memory.
  explicit BucketCompressor(GpuContext* gpu) : gpu_(gpu) {}
  // Forgets the last iteration's collectives; the next are issued on `comm`.
  void Begin(Communicator* comm);
  void Issued(CommHandle handle, std::size_t bytes);
  // The residual where the compressor computes: in host memory or on its GPU.
  Dtype* mutable_residual();
  GpuContext* gpu_;
  std::vector<CommHandle> handles_;
  std::size_t bytes_sent_ = 0;
  // One axis of the bucket's length (none for methods without error feedback).
  Blob<Dtype> residual_;
  Communicator* comm_ = nullptr;
};

// A buffer's host copy as a vector, and the reverse (Blob's side of the copy is lazy).
template <typename Dtype>
std::vector<Dtype> BlobValues(Blob<Dtype>* blob);
template <typename Dtype>
void SetBlobValues(const std::vector<Dtype>& values, Blob<Dtype>* blob);

// The compressor of `spec` for a bucket of `count` elements made of `params`; `seed` (the
// same on every rank) starts PowerSGD's Q; `topk_momentum` is the momentum top-k corrects
// (0: plain error feedback). `gpu`: the bucket is in its memory (null: host).
template <typename Dtype>
std::unique_ptr<BucketCompressor<Dtype>> MakeBucketCompressor(
    const GradCompression& spec, std::size_t count, const std::vector<BucketParam>& params,
    std::uint64_t seed, double topk_momentum, GpuContext* gpu = nullptr);

}  // namespace doppio
