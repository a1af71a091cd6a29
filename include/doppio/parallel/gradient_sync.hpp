#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "doppio/core/net.hpp"
#include "doppio/parallel/communicator.hpp"
#include "doppio/parallel/device_timer.hpp"
#include "doppio/parallel/gradient_compression.hpp"
#include "doppio/parallel/timeline.hpp"

namespace doppio {

// How the ranks combine their gradients.
//   overlap:      buckets are allreduced while backward goes on below them (the default)
//   reduce_bcast: buckets are reduced to rank 0 while backward goes on; rank 0 alone
//                 updates, then broadcasts the weights (OSU-Caffe's scheme)
//   blocking:     one allreduce of every gradient after backward (for comparison)
enum class SyncMode { kOverlap, kReduceBroadcast, kBlocking };
// Throws Error naming --sync for an unknown name.
SyncMode ParseSyncMode(const std::string& name);
const char* SyncModeName(SyncMode mode);

// A contiguous slice of the gradient arena, communicated as one operation.
struct GradientBucket {
  std::size_t offset = 0;  // in elements
  std::size_t count = 0;
  int first_param = 0;  // learnable parameters [first_param, end_param), arena order
  int end_param = 0;
  int num_synced = 0;  // those of them that are communicated (lr_mult != 0)
};

// What communication cost one iteration on this rank (seconds).
struct SyncStats {
  double wait = 0;          // the main thread blocked on communication: the exposed part
  double comm = 0;          // time during which some communication was in progress
  double hidden = 0;        // the part of `comm` that overlapped backward
  double codec = 0;         // compressing and decompressing gradients (--grad_compression)
  std::uint64_t bytes = 0;  // what this rank contributed to the collectives
};

// Aggregates the training net's gradients across ranks, layer by layer.
//
// The buckets are contiguous slices of the gradient arena, filled in arena order (one small
// first bucket so that communication starts early, then bucket_mb each). Net lays the
// arena out in the order backward makes the gradients final, so the buckets normally
// become complete one after the other as backward runs; the launch order does not rely on
// it. PlanLaunchOrder orders the buckets by the layer whose backward completes each (the
// last to complete goes last), and the collectives are issued in exactly that order: MPI
// and NCCL match collectives by their order, so every rank must issue the same sequence,
// and the plan, a function of the net alone, is the same on every rank. Net's
// after-backward callback counts down each bucket's parameters; in the last sub-iteration
// of an iter_size accumulation, a complete bucket is launched as soon as every bucket
// planned before it has been: one complete ahead of its turn is held back, not issued out
// of order. A bucket whose gradients are reported final twice, or that backward never
// completed, is an Error naming it (the plan and backward disagree: issuing anyway could
// mismatch the ranks' collectives). FinishGradients waits for all of them and divides by
// the number of ranks. Parameters with lr_mult 0 are not communicated (large ones split the
// buckets).
//
// In GPU mode the buckets are slices of the net's device arena (MemoryKind::kDevice). A
// bucket is issued as soon as backward has queued the kernels that finish it; the
// communicator orders the collective after them (an event on the compute stream), so it
// runs while the kernels queued later still run. Before the update the compute stream
// joins the communication (Communicator::JoinDeviceWork) and the scaling runs on the GPU.
// Given a DeviceTimer, FinishGradients marks the end of backward on the compute stream and
// resolves the timer after its wait: the part of communication hidden behind backward is
// then measured against the kernels' end, not against the moment they were queued.
//
// With a compression method (--grad_compression, gradient_compression.hpp) each bucket is
// exchanged by its BucketCompressor instead of an allreduce, where the arena is (in GPU mode
// by the compressors' kernels on the GPU): compressed when it is launched, its second
// collective (PowerSGD) issued and every bucket decompressed in FinishGradients, in the
// launch order; the sum then replaces the bucket as an allreduce's would. The codec's spans
// are host time: on a GPU, queueing the kernels and (fp16, bf16, topk) waiting for the
// packed bucket's copy to the host. Before `compression_start_iter` the buckets go
// uncompressed. With iter_size > 1 the accumulated gradient is compressed once. The lossy
// sum is not what rank 0 alone could reduce and broadcast, so reduce_bcast refuses
// compression.
//
// The bucket layout is a function of the net and the options only, so it is the same on
// every rank; LayoutHash lets the ranks check that before training.
template <typename Dtype>
class GradientSync {
 public:
  // Throws Error naming --grad_compression and --sync for a compression method with
  // reduce_bcast.
  GradientSync(Net<Dtype>* net, Communicator* comm, SyncMode mode, double bucket_mb, int iter_size,
               Timeline* timeline = nullptr, GradCompression compression = GradCompression(),
               int compression_start_iter = 0, double topk_momentum = 0);
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  static std::vector<GradientBucket> PlanBuckets(const Net<Dtype>& net, std::size_t bucket_bytes,
                                                 std::size_t first_bucket_bytes);
  // The buckets the trainer uses for --bucket_mb: PlanBuckets with the small first bucket.
  static std::vector<GradientBucket> PlanBucketsForMb(const Net<Dtype>& net, double bucket_mb);
  // For each of `buckets` (of `net`), the layer whose backward makes its last gradient final.
  static std::vector<int> CompletingLayers(const Net<Dtype>& net,
                                           const std::vector<GradientBucket>& buckets);
  // The order in which `buckets` (of `net`) are launched: by the layer whose backward
  // completes each, latest layer first (backward runs from the last layer to the first);
  // ties in bucket order.
  static std::vector<int> PlanLaunchOrder(const Net<Dtype>& net,
                                          const std::vector<GradientBucket>& buckets);

  SyncMode mode() const { return mode_; }
  const std::vector<GradientBucket>& buckets() const { return buckets_; }
  const std::vector<int>& launch_order() const { return launch_order_; }
  std::uint64_t LayoutHash() const;
  std::string Describe() const;

  const GradCompression& compression() const { return compression_; }
  // The momentum top-k's compressors correct (topk_compressor.hpp): the constructor's
  // topk_momentum where the method is top-k of a FRACTION below 1, else 0.
  double corrected_momentum() const;
  // Whether the buckets are compressed (a method, and more than one rank).
  bool compressing() const { return !compressors_.empty(); }
  // One field of the compressors' state, concatenated in bucket order: this rank's residuals
  // (error feedback) and velocities (top-k's momentum correction), and the state the ranks
  // share (PowerSGD's Q, top-k's last step). Empty where the method keeps none.
  enum class StateField { kResidual, kVelocity, kShared };
  std::vector<Dtype> CompressionState(StateField field) const;
  // Replaces it; Error when `values` has not the length the getter gives.
  void SetCompressionState(StateField field, const std::vector<Dtype>& values);

  // The solver's hooks, in the order they run in one iteration. `iter`: the solver's
  // iteration (compression starts at compression_start_iter).
  void BeginIteration(int iter = 0);
  void AfterBackward(int layer_id);
  void FinishGradients();
  // reduce_bcast: only rank 0 updates.
  bool ApplyUpdateHere() const;
  void AfterUpdate();

  const SyncStats& last_stats() const { return stats_; }
  // When the last FinishGradients found forward and backward finished: with a DeviceTimer,
  // when the device finished backward's kernels; without, when the host called it.
  double compute_end() const { return compute_end_; }
  // Not owned; null: host clocks only. FinishGradients resolves it.
  void set_device_timer(DeviceTimer* timer) { device_timer_ = timer; }

 private:
  // The gradient arena where the net computes: its GPU's memory in GPU mode.
  Dtype* ArenaDiff();
  Dtype* ArenaData();
  MemoryKind ArenaMemory() const;
  // Launches, in the planned order, the complete buckets whose predecessors are launched.
  void LaunchReady();
  void Launch(int bucket);
  std::string BucketLabel(int bucket) const;
  // One compressor's part of a state field, and its replacement.
  static std::vector<Dtype> Field(BucketCompressor<Dtype>& compressor, StateField field);
  static void SetField(BucketCompressor<Dtype>& compressor, StateField field,
                       const std::vector<Dtype>& values);
  // Runs `step` and records it as a compute span of the codec.
  template <typename Step>
  void Codec(const std::string& name, Step step);

  Net<Dtype>* net_;
  Communicator* comm_;
  SyncMode mode_;
  double bucket_mb_;
  int iter_size_;
  Timeline* timeline_;
  GradCompression compression_;
  int compression_start_iter_;
  double topk_momentum_;
  std::vector<GradientBucket> buckets_;
  // One per bucket when compressing; empty otherwise.
  std::vector<std::unique_ptr<BucketCompressor<Dtype>>> compressors_;
  // This iteration's buckets go through compressors_.
  bool compress_now_ = false;
  // For each layer, the bucket of each parameter whose gradient it finishes (repeated).
  std::vector<std::vector<int>> layer_buckets_;
  std::vector<int> launch_order_;
  std::vector<int> pending_;
  std::vector<CommHandle> handles_;
  int sub_iteration_ = 0;
  // Buckets launched this iteration: launch_order_[0, launched_).
  int launched_ = 0;
  double iteration_start_ = 0;
  double compute_end_ = 0;
  DeviceTimer* device_timer_ = nullptr;
  SyncStats stats_;
};

}  // namespace doppio
