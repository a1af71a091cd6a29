#include "doppio/parallel/gradient_sync.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "doppio/core/device_math.hpp"
#include "doppio/util/hash.hpp"
#include "doppio/util/rng.hpp"

namespace doppio {

SyncMode ParseSyncMode(const std::string& name) {
  if (name == "overlap") return SyncMode::kOverlap;
  if (name == "reduce_bcast") return SyncMode::kReduceBroadcast;
  if (name == "blocking") return SyncMode::kBlocking;
  DOPPIO_FAIL() << "--sync must be overlap, reduce_bcast or blocking, not '" << name << "'";
  return SyncMode::kOverlap;
}

const char* SyncModeName(SyncMode mode) {
  switch (mode) {
    case SyncMode::kOverlap:
      return "overlap";
    case SyncMode::kReduceBroadcast:
      return "reduce_bcast";
    case SyncMode::kBlocking:
      return "blocking";
  }
  return "?";
}

namespace {

std::string Megabytes(double bytes) {
  std::ostringstream text;
  if (bytes < (1 << 20)) {
    text << std::fixed << std::setprecision(1) << bytes / 1024 << " KB";
  } else {
    text << std::fixed << std::setprecision(1) << bytes / (1 << 20) << " MB";
  }
  return text.str();
}

// The length of the union of the intervals, and of its part before `until`.
std::pair<double, double> UnionLength(std::vector<std::pair<double, double>> spans, double until) {
  std::sort(spans.begin(), spans.end());
  double total = 0, before = 0;
  double start = 0, end = 0;
  bool open = false;
  auto close = [&] {
    total += end - start;
    before += std::max(0.0, std::min(end, until) - start);
  };
  for (const auto& span : spans) {
    if (!open) {
      start = span.first;
      end = span.second;
      open = true;
    } else if (span.first <= end) {
      end = std::max(end, span.second);
    } else {
      close();
      start = span.first;
      end = span.second;
    }
  }
  if (open) close();
  return {total, before};
}

}  // namespace

template <typename Dtype>
std::vector<GradientBucket> GradientSync<Dtype>::PlanBuckets(const Net<Dtype>& net,
                                                             std::size_t bucket_bytes,
                                                             std::size_t first_bucket_bytes) {
  const auto& params = net.learnable_params();
  const auto& offsets = net.learnable_param_offsets();
  const auto& lr = net.params_lr();
  std::vector<GradientBucket> buckets;
  GradientBucket current;
  bool open = false;
  auto close = [&] {
    if (open && current.num_synced > 0) buckets.push_back(current);
    open = false;
  };
  for (int i = 0; i < static_cast<int>(params.size()); ++i) {
    const std::size_t count = params[i]->count();
    const std::size_t threshold = buckets.empty() ? first_bucket_bytes : bucket_bytes;
    const bool synced = lr[i] != 0.f && count > 0;
    if (!synced) {
      // A parameter that is not communicated: a small one rides along inside the bucket
      // (its gradient is zero), a large one ends it.
      if (open && count * sizeof(Dtype) * 16 > threshold) close();
      if (open) {
        current.count = offsets[i] + count - current.offset;
        current.end_param = i + 1;
      }
      continue;
    }
    if (!open) {
      current = GradientBucket();
      current.offset = offsets[i];
      current.first_param = i;
      open = true;
    }
    current.count = offsets[i] + count - current.offset;
    current.end_param = i + 1;
    ++current.num_synced;
    if (current.count * sizeof(Dtype) >= threshold) close();
  }
  close();
  return buckets;
}

template <typename Dtype>
std::vector<GradientBucket> GradientSync<Dtype>::PlanBucketsForMb(const Net<Dtype>& net,
                                                                  double bucket_mb) {
  DOPPIO_ENSURE(bucket_mb > 0) << "--bucket_mb must be positive, not " << bucket_mb;
  const auto bucket_bytes = static_cast<std::size_t>(bucket_mb * (1 << 20));
  // The first bucket holds the last layers' gradients, ready first: keep it small so that
  // communication starts early in backward.
  const std::size_t first_bytes = std::min<std::size_t>(bucket_bytes, 256 << 10);
  return PlanBuckets(net, std::max<std::size_t>(bucket_bytes, 1),
                     std::max<std::size_t>(first_bytes, 1));
}

template <typename Dtype>
std::vector<int> GradientSync<Dtype>::CompletingLayers(const Net<Dtype>& net,
                                                       const std::vector<GradientBucket>& buckets) {
  const auto& last_layer = net.learnable_param_last_layer();
  const auto& lr = net.params_lr();
  std::vector<int> completed_by(buckets.size(), -1);
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    int layer = static_cast<int>(net.layers().size());
    for (int i = buckets[b].first_param; i < buckets[b].end_param; ++i) {
      if (lr[i] == 0.f || net.learnable_params()[i]->count() == 0) continue;
      layer = std::min(layer, last_layer[i]);
    }
    completed_by[b] = layer;
  }
  return completed_by;
}

template <typename Dtype>
std::vector<int> GradientSync<Dtype>::PlanLaunchOrder(const Net<Dtype>& net,
                                                      const std::vector<GradientBucket>& buckets) {
  const std::vector<int> completed_by = CompletingLayers(net, buckets);
  std::vector<int> order(buckets.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return completed_by[a] > completed_by[b]; });
  return order;
}

template <typename Dtype>
GradientSync<Dtype>::GradientSync(Net<Dtype>* net, Communicator* comm, SyncMode mode,
                                  double bucket_mb, int iter_size, Timeline* timeline,
                                  GradCompression compression, int compression_start_iter,
                                  double topk_momentum)
    : net_(net),
      comm_(comm),
      mode_(mode),
      bucket_mb_(bucket_mb),
      iter_size_(iter_size),
      timeline_(timeline),
      compression_(std::move(compression)),
      compression_start_iter_(compression_start_iter),
      topk_momentum_(topk_momentum) {
  DOPPIO_ENSURE(iter_size >= 1) << "iter_size must be >= 1, not " << iter_size;
  DOPPIO_ENSURE(!compression_.active() || mode != SyncMode::kReduceBroadcast)
      << "--grad_compression=" << compression_.text
      << " is lossy and --sync=reduce_bcast reduces the exact gradients to rank 0: use "
         "--sync=overlap or --sync=blocking with it, or --grad_compression=none";
  DOPPIO_ENSURE(compression_start_iter >= 0)
      << "--compression_start_iter must be >= 0, not " << compression_start_iter;
  buckets_ = PlanBucketsForMb(*net, bucket_mb);
  layer_buckets_.assign(net->layers().size(), {});
  const auto& last_layer = net->learnable_param_last_layer();
  const auto& lr = net->params_lr();
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b) {
    for (int i = buckets_[b].first_param; i < buckets_[b].end_param; ++i) {
      if (lr[i] == 0.f || net->learnable_params()[i]->count() == 0) continue;
      layer_buckets_[last_layer[i]].push_back(b);
    }
  }
  launch_order_ = PlanLaunchOrder(*net, buckets_);
  if (compression_.active() && comm->size() > 1) {
    const auto& params = net->learnable_params();
    const auto& offsets = net->learnable_param_offsets();
    for (int b = 0; b < static_cast<int>(buckets_.size()); ++b) {
      std::vector<BucketParam> bucket_params;
      for (int i = buckets_[b].first_param; i < buckets_[b].end_param; ++i) {
        BucketParam param;
        param.offset = offsets[i] - buckets_[b].offset;
        param.count = params[i]->count();
        param.rows = params[i]->num_axes() >= 2 ? params[i]->shape(0) : 0;
        bucket_params.push_back(param);
      }
      // The same seed on every rank: PowerSGD's ranks start from the same Q.
      compressors_.push_back(MakeBucketCompressor<Dtype>(
          compression_, buckets_[b].count, bucket_params, DeriveSeed(1701, b), corrected_momentum(),
          net->gpu_context().get()));
    }
  }
  pending_.assign(buckets_.size(), 0);
  handles_.assign(buckets_.size(), nullptr);
}

template <typename Dtype>
std::uint64_t GradientSync<Dtype>::LayoutHash() const {
  Hasher hash;
  hash.Add(static_cast<int>(mode_));
  hash.Add(bucket_mb_);
  hash.Add(iter_size_);
  hash.Add(static_cast<std::uint64_t>(sizeof(Dtype)));
  hash.Add(static_cast<int>(compression_.method));
  hash.Add(compression_.fraction);
  hash.Add(compression_.rank);
  hash.Add(compression_start_iter_);
  hash.Add(static_cast<std::uint64_t>(net_->arena_count()));
  for (const Blob<Dtype>* blob : net_->learnable_params()) {
    hash.Add(static_cast<std::uint64_t>(blob->num_axes()));
    for (int axis = 0; axis < blob->num_axes(); ++axis) hash.Add(blob->shape(axis));
  }
  for (const GradientBucket& bucket : buckets_) {
    hash.Add(static_cast<std::uint64_t>(bucket.offset));
    hash.Add(static_cast<std::uint64_t>(bucket.count));
  }
  return hash.value();
}

template <typename Dtype>
std::string GradientSync<Dtype>::Describe() const {
  std::ostringstream text;
  std::size_t total = 0;
  for (const auto& bucket : buckets_) total += bucket.count;
  text << buckets_.size() << " gradient bucket" << (buckets_.size() == 1 ? "" : "s") << " ("
       << Megabytes(static_cast<double>(total) * sizeof(Dtype)) << " in all";
  if (!buckets_.empty()) {
    text << "; first " << Megabytes(static_cast<double>(buckets_[0].count) * sizeof(Dtype));
    std::size_t largest = 0;
    for (const auto& bucket : buckets_) largest = std::max(largest, bucket.count);
    text << ", largest " << Megabytes(static_cast<double>(largest) * sizeof(Dtype));
  }
  text << ")";
  return text.str();
}

template <typename Dtype>
std::string GradientSync<Dtype>::BucketLabel(int bucket) const {
  const char* what = mode_ == SyncMode::kReduceBroadcast ? "reduce" : "allreduce";
  std::ostringstream text;
  text << what << " bucket " << bucket << " ("
       << Megabytes(static_cast<double>(buckets_[bucket].count) * sizeof(Dtype)) << ")";
  return text.str();
}

template <typename Dtype>
double GradientSync<Dtype>::corrected_momentum() const {
  const bool topk = compression_.method == GradCompression::Method::kTopK;
  return topk && compression_.fraction < 1 ? topk_momentum_ : 0.0;
}

namespace {

const char* StateFieldName(int field) {
  static const char* const names[] = {"residual", "velocity", "shared state"};
  return names[field];
}

}  // namespace

template <typename Dtype>
std::vector<Dtype> GradientSync<Dtype>::Field(BucketCompressor<Dtype>& compressor,
                                              StateField field) {
  switch (field) {
    case StateField::kResidual:
      return compressor.residual();
    case StateField::kVelocity:
      return compressor.velocity();
    case StateField::kShared:
      break;
  }
  return compressor.shared_state();
}

template <typename Dtype>
void GradientSync<Dtype>::SetField(BucketCompressor<Dtype>& compressor, StateField field,
                                   const std::vector<Dtype>& values) {
  switch (field) {
    case StateField::kResidual:
      return compressor.set_residual(values);
    case StateField::kVelocity:
      return compressor.set_velocity(values);
    case StateField::kShared:
      break;
  }
  compressor.set_shared_state(values);
}

template <typename Dtype>
std::vector<Dtype> GradientSync<Dtype>::CompressionState(StateField field) const {
  std::vector<Dtype> values;
  for (const auto& compressor : compressors_) {
    const std::vector<Dtype> part = Field(*compressor, field);
    values.insert(values.end(), part.begin(), part.end());
  }
  return values;
}

template <typename Dtype>
void GradientSync<Dtype>::SetCompressionState(StateField field, const std::vector<Dtype>& values) {
  const std::size_t expected = CompressionState(field).size();
  DOPPIO_ENSURE(values.size() == expected)
      << "--grad_compression=" << compression_.text << ": " << values.size() << " values of "
      << StateFieldName(static_cast<int>(field)) << " for buckets that hold " << expected;
  auto next = values.begin();
  for (const auto& compressor : compressors_) {
    const std::size_t size = Field(*compressor, field).size();
    SetField(*compressor, field, std::vector<Dtype>(next, next + size));
    next += size;
  }
}

template <typename Dtype>
template <typename Step>
void GradientSync<Dtype>::Codec(const std::string& name, Step step) {
  const double start = CommClockSeconds();
  step();
  const double end = CommClockSeconds();
  stats_.codec += end - start;
  if (timeline_) timeline_->Span(name, "compression", Timeline::kCompute, start, end);
}

template <typename Dtype>
void GradientSync<Dtype>::BeginIteration(int iter) {
  const bool compress = compressing() && iter >= compression_start_iter_;
  if (compress && !compress_now_ && compression_start_iter_ > 0) {
    LOG(INFO) << "Iteration " << iter
              << ": gradient compression (--grad_compression=" << compression_.text
              << ") starts (--compression_start_iter=" << compression_start_iter_ << ")";
  }
  compress_now_ = compress;
  sub_iteration_ = 0;
  iteration_start_ = CommClockSeconds();
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    pending_[b] = buckets_[b].num_synced;
    handles_[b] = nullptr;
  }
  launched_ = 0;
  stats_ = SyncStats();
}

template <typename Dtype>
Dtype* GradientSync<Dtype>::ArenaDiff() {
#ifdef DOPPIO_WITH_CUDA
  if (net_->gpu_context()) return net_->mutable_arena_gpu_diff();
#endif
  return net_->mutable_arena_diff();
}

template <typename Dtype>
Dtype* GradientSync<Dtype>::ArenaData() {
#ifdef DOPPIO_WITH_CUDA
  if (net_->gpu_context()) return net_->mutable_arena_gpu_data();
#endif
  return net_->mutable_arena_data();
}

template <typename Dtype>
MemoryKind GradientSync<Dtype>::ArenaMemory() const {
  return net_->gpu_context() ? MemoryKind::kDevice : MemoryKind::kHost;
}

template <typename Dtype>
void GradientSync<Dtype>::LaunchReady() {
  while (launched_ < static_cast<int>(launch_order_.size()) &&
         pending_[launch_order_[launched_]] == 0) {
    Launch(launch_order_[launched_]);
  }
}

template <typename Dtype>
void GradientSync<Dtype>::Launch(int bucket) {
  DOPPIO_ENSURE(!handles_[bucket])
      << "gradient bucket " << bucket << " was launched twice in one iteration";
  const GradientBucket& slice = buckets_[bucket];
  // On a GPU the communicator orders the collective after the backward kernels queued so
  // far, which write this slice; those queued later go on meanwhile.
  Dtype* diff = ArenaDiff() + slice.offset;
  if (compress_now_) {
    BucketCompressor<Dtype>& compressor = *compressors_[bucket];
    Codec("compress bucket " + std::to_string(bucket), [&] {
      compressor.Start(diff, comm_,
                       compression_.text + " bucket " + std::to_string(bucket) + " (" +
                           Megabytes(static_cast<double>(slice.count) * sizeof(Dtype)) + ")");
    });
    ++launched_;
    return;
  }
  if (mode_ == SyncMode::kReduceBroadcast) {
    handles_[bucket] = comm_->IReduce(diff, slice.count, CommTypeOf<Dtype>(), ReduceOp::kSum, 0,
                                      ArenaMemory(), BucketLabel(bucket));
  } else {
    handles_[bucket] = comm_->IAllreduce(diff, slice.count, CommTypeOf<Dtype>(), ReduceOp::kSum,
                                         ArenaMemory(), BucketLabel(bucket));
  }
  stats_.bytes += slice.count * sizeof(Dtype);
  ++launched_;
}

template <typename Dtype>
void GradientSync<Dtype>::AfterBackward(int layer_id) {
  if (sub_iteration_ == iter_size_ - 1 && comm_->size() > 1 && mode_ != SyncMode::kBlocking) {
    for (int bucket : layer_buckets_[layer_id]) {
      DOPPIO_ENSURE(pending_[bucket] > 0)
          << "gradient bucket " << bucket << ": the backward of layer '"
          << net_->layer_label(layer_id)
          << "' finished a gradient of it after all of them were final (a layer's backward "
             "reported twice in one pass?)";
      --pending_[bucket];
    }
    LaunchReady();
    // Between layers: let the communication thread move what is in flight along.
    if (launched_ > 0) comm_->Poke();
  }
  if (layer_id == 0) ++sub_iteration_;
}

template <typename Dtype>
void GradientSync<Dtype>::FinishGradients() {
  const int backward_end = device_timer_ ? device_timer_->Mark() : -1;
  const double enter = CommClockSeconds();
  // After the host's wait, when the device is (nearly) done: no synchronisation of its own.
  auto resolve = [&] {
    compute_end_ = enter;
    if (device_timer_) {
      device_timer_->Resolve();
      compute_end_ = device_timer_->time(backward_end);
    }
  };
  if (comm_->size() == 1 || buckets_.empty()) {
    resolve();
    return;
  }
  std::vector<CommHandle> waited;
  const double codec_before = stats_.codec;
  if (compress_now_) {
    if (mode_ == SyncMode::kBlocking) {
      for (int bucket : launch_order_) Launch(bucket);
    } else {
      DOPPIO_ENSURE(launched_ == static_cast<int>(launch_order_.size()))
          << "gradient bucket " << launch_order_[launched_]
          << " was not launched by the end of backward: backward did not complete it in the "
             "planned order";
    }
    for (int bucket : launch_order_) {
      // The wait for the first collective is communication; what follows is compression.
      compressors_[bucket]->Wait();
      Codec("compress bucket " + std::to_string(bucket) + " (second step)",
            [&] { compressors_[bucket]->Continue(); });
    }
    for (int bucket : launch_order_) {
      BucketCompressor<Dtype>& compressor = *compressors_[bucket];
      compressor.Wait();
      Codec("decompress bucket " + std::to_string(bucket),
            [&] { compressor.Decompress(ArenaDiff() + buckets_[bucket].offset); });
      waited.insert(waited.end(), compressor.handles().begin(), compressor.handles().end());
      stats_.bytes += compressor.bytes_sent();
    }
  } else if (mode_ == SyncMode::kBlocking) {
    const std::size_t begin = buckets_.front().offset;
    const std::size_t end = buckets_.back().offset + buckets_.back().count;
    std::ostringstream label;
    label << "allreduce all gradients ("
          << Megabytes(static_cast<double>(end - begin) * sizeof(Dtype)) << ")";
    waited.push_back(comm_->IAllreduce(ArenaDiff() + begin, end - begin, CommTypeOf<Dtype>(),
                                       ReduceOp::kSum, ArenaMemory(), label.str()));
    stats_.bytes += (end - begin) * sizeof(Dtype);
  } else {
    if (launched_ < static_cast<int>(launch_order_.size())) {
      const int missed = launch_order_[launched_];
      DOPPIO_FAIL() << "gradient bucket " << missed << " was not launched by the end of backward ("
                    << pending_[missed] << " of its " << buckets_[missed].num_synced
                    << " gradients not final, " << launch_order_.size() - launched_
                    << " bucket(s) left): backward did not complete it in the planned order";
    }
    waited = handles_;
  }
  for (const CommHandle& handle : waited) handle->Wait();
  const double exit = CommClockSeconds();
  // What this thread spent compressing and decompressing here was not a wait.
  const double codec_here = stats_.codec - codec_before;
  resolve();
  // What follows on the compute stream (the scaling, the update) reads the results.
  if (ArenaMemory() == MemoryKind::kDevice) comm_->JoinDeviceWork();
  // The sum over ranks becomes the mean: the gradient of the global batch.
  const bool scale = mode_ != SyncMode::kReduceBroadcast || comm_->rank() == 0;
  if (scale) {
    const Dtype factor = Dtype(1) / comm_->size();
    const DeviceMath<Dtype> math(net_->gpu_context().get());
    Dtype* diff = ArenaDiff();
    for (const GradientBucket& bucket : buckets_) {
      math.scal(static_cast<int>(bucket.count), factor, diff + bucket.offset);
    }
  }
  std::vector<std::pair<double, double>> spans;
  for (const CommHandle& handle : waited) {
    spans.emplace_back(handle->start_time(), handle->end_time());
    if (timeline_) {
      // From the moment backward released the bucket to the moment the communication
      // thread started it, then the communication itself.
      timeline_->Span("queued: " + handle->label(), "queued", Timeline::kCommunication,
                      handle->issue_time(), handle->start_time());
      timeline_->Span(handle->label(), "communication", Timeline::kCommunication,
                      handle->start_time(), handle->end_time(), handle->bytes());
    }
  }
  const auto lengths = UnionLength(spans, compute_end_);
  stats_.comm += lengths.first;
  stats_.hidden += lengths.second;
  stats_.wait += exit - enter - codec_here;
  if (timeline_) {
    timeline_->Span("wait for gradients", "wait", Timeline::kCompute, enter, exit);
  }
}

template <typename Dtype>
bool GradientSync<Dtype>::ApplyUpdateHere() const {
  return mode_ != SyncMode::kReduceBroadcast || comm_->rank() == 0 || comm_->size() == 1;
}

template <typename Dtype>
void GradientSync<Dtype>::AfterUpdate() {
  if (mode_ != SyncMode::kReduceBroadcast || comm_->size() == 1 || net_->arena_count() == 0) {
    return;
  }
  const double enter = CommClockSeconds();
  // On a GPU the weights are broadcast in device memory, after rank 0's update kernels.
  CommHandle handle = comm_->IBroadcast(
      ArenaData(), net_->arena_count(), CommTypeOf<Dtype>(), 0, ArenaMemory(),
      "broadcast weights (" + Megabytes(static_cast<double>(net_->arena_count()) * sizeof(Dtype)) +
          ")");
  handle->Wait();
  if (ArenaMemory() == MemoryKind::kDevice) comm_->JoinDeviceWork();
  const double exit = CommClockSeconds();
  stats_.wait += exit - enter;
  stats_.comm += handle->end_time() - handle->start_time();
  stats_.bytes += net_->arena_count() * sizeof(Dtype);
  if (timeline_) {
    timeline_->Span(handle->label(), "communication", Timeline::kCommunication,
                    handle->start_time(), handle->end_time(), handle->bytes());
    timeline_->Span("wait for weights", "wait", Timeline::kCompute, enter, exit);
  }
}

DOPPIO_INSTANTIATE_CLASS(GradientSync);

}  // namespace doppio
