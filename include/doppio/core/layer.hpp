#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "doppio/core/batch_position.hpp"
#include "doppio/core/blob.hpp"
#include "doppio/core/common.hpp"
#include "doppio/core/input_exchange.hpp"
#include "doppio/core/input_stats.hpp"
#include "doppio/core/precision.hpp"
#include "doppio/device/cpu_options.hpp"
#include "doppio/device/gpu_context.hpp"
#include "doppio/util/rng.hpp"

namespace doppio {

// A layer's name and type as every message gives them: "layer 'conv1' (Convolution)".
std::string DescribeLayer(const LayerParameter& param);

// A layer computes top blobs from bottom blobs (Forward) and, given the gradient of the
// loss with respect to its tops, the gradients with respect to its bottoms and parameters
// (Backward). Layers compute; they never communicate.
//
// Gradient conventions every layer follows:
// - Backward OVERWRITES the diff of each bottom i with propagate_down[i] true.
// - Backward ACCUMULATES (+=) into the diff of its parameter blobs, so that shared
//   parameters and iter_size accumulation work; the solver clears them each iteration.
template <typename Dtype>
class Layer {
 public:
  using BlobVec = std::vector<Blob<Dtype>*>;

  explicit Layer(const LayerParameter& param);
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // Checks blob counts, runs LayerSetUp and Reshape, and sets up loss weights.
  void SetUp(const BlobVec& bottom, const BlobVec& top);
  // One-time set-up: read the layer's parameters, create and fill its parameter blobs.
  virtual void LayerSetUp(const BlobVec& bottom, const BlobVec& top) {}
  // Shapes the tops (and internal buffers) from the bottoms' shapes.
  virtual void Reshape(const BlobVec& bottom, const BlobVec& top) = 0;

  // Returns the weighted loss this layer contributes (0 for non-loss layers).
  Dtype Forward(const BlobVec& bottom, const BlobVec& top);
  void Backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom);

  std::vector<std::shared_ptr<Blob<Dtype>>>& blobs() { return blobs_; }
  const LayerParameter& layer_param() const { return layer_param_; }
  const std::string& name() const { return layer_param_.name(); }
  virtual const char* type() const { return ""; }
  // The engine whose kernels the layer runs ("CAFFE", "CUDNN", "ONEDNN"), as the registry
  // chose it; "CAFFE" for a layer constructed directly.
  const std::string& engine() const { return engine_; }
  void set_engine(std::string engine) { engine_ = std::move(engine); }
  // The precision the net asks this layer for (RequestedPrecision: its own, the net's, or
  // FP32 where it needs the range), set before SetUp; FP32 for a layer on its own. And what
  // the layer runs in once set up: a layer that cannot run what is asked runs FP32 (Net::Init
  // refuses that where the layer named its precision itself).
  Precision precision_request() const { return precision_request_; }
  void set_precision_request(Precision precision) { precision_request_ = precision; }
  virtual LayerPrecision precision() const { return {}; }

  Dtype loss(int top_index) const {
    return top_index < static_cast<int>(loss_.size()) ? loss_[top_index] : Dtype(0);
  }
  void set_loss(int top_index, Dtype value);

  // Blob-count contracts; -1 means no constraint.
  virtual int ExactNumBottomBlobs() const { return -1; }
  virtual int MinBottomBlobs() const { return -1; }
  virtual int MaxBottomBlobs() const { return -1; }
  virtual int ExactNumTopBlobs() const { return -1; }
  virtual int MinTopBlobs() const { return -1; }
  virtual int MaxTopBlobs() const { return -1; }
  virtual bool EqualNumBottomTopBlobs() const { return false; }
  // Tops beyond those the prototxt names are created anonymously by Net (up to the minimum).
  virtual bool AutoTopBlobs() const { return false; }
  // False where a bottom can never take a gradient (labels, indices).
  virtual bool AllowForceBackward(int bottom_index) const { return true; }

  bool param_propagate_down(int param_id) const {
    return param_id < static_cast<int>(param_propagate_down_.size()) &&
           param_propagate_down_[param_id];
  }
  void set_param_propagate_down(int param_id, bool value);

  // Where Forward and Backward run. GPU mode needs a GPU context (and a CUDA build); each
  // layer's _gpu kernels then run on it, or, for a layer without them, its _cpu code on
  // host copies of the blobs.
  Mode mode() const { return mode_; }
  void set_mode(Mode mode) { mode_ = mode; }
  const std::shared_ptr<GpuContext>& gpu_context() const { return gpu_; }
  void set_gpu_context(std::shared_ptr<GpuContext> gpu) { gpu_ = std::move(gpu); }
  // The CPU engines' choices (device/cpu_options.hpp), set by the net before SetUp.
  const CpuOptions& cpu_options() const { return cpu_options_; }
  void set_cpu_options(const CpuOptions& options) { cpu_options_ = options; }
  // GPU mode on `gpu`, or CPU mode when it is null.
  void SetGpu(std::shared_ptr<GpuContext> gpu) {
    mode_ = gpu ? Mode::GPU : Mode::CPU;
    gpu_ = std::move(gpu);
  }
  // Seeds the layer's own random stream (fillers) and the key of its per-sample draws
  // (dropout masks, stochastic pooling). It restarts the layer's own numbering of samples
  // (FirstSamplePosition), so that re-seeding repeats its draws.
  void set_seed(std::uint64_t seed) {
    rng_.Seed(seed);
    own_position_ = 0;
  }
  Rng& rng() { return rng_; }
  // The key of the layer's counter-based draws (per-sample randomness, philox.hpp).
  std::uint64_t seed() const { return rng_.seed(); }
  // Where the net's current batch sits in the stream of training samples. Net shares one
  // among its layers; a layer on its own has its own.
  void set_batch_position(std::shared_ptr<BatchPosition> position) {
    batch_position_ = std::move(position);
  }
  BatchPosition& batch_position() const { return *batch_position_; }
  // The stream position of the first of the `num` samples this Forward works on: the net's
  // batch position when a layer of the net reads records, else the layer's own count of the
  // samples it has seen.
  std::uint64_t FirstSamplePosition(int num);

  // Loss layers report loss_weight 1 on their first top by default.
  virtual bool IsLossLayer() const { return false; }
  // For a layer that reads records: the batches one pass over its share of them takes
  // (known after SetUp). 0 for the others.
  virtual std::uint64_t batches_per_epoch() const { return 0; }
  // For a layer that reads records: the position in its global stream of records at which
  // the next global batch starts (what a snapshot saves), and restarting the stream at such
  // a position (what a resume does). Other layers have no position, and SeekStream on them
  // is a programming error.
  virtual std::optional<std::uint64_t> stream_position() const { return std::nullopt; }
  virtual void SeekStream(std::uint64_t position);
  // For a layer that fills batches in the background: its counters since SetUp (safe to
  // call while it fills). Zero for the others.
  virtual InputStats input_stats() const { return {}; }

  // Buffers a layer keeps from Forward for Backward. A layer that keeps, from its Forward
  // until after its Backward, an exact copy of what Forward wrote to top[top_index] returns
  // it here (BatchNorm's normalised output); others return null.
  virtual const Blob<Dtype>* KeptTopCopy(int top_index) const { return nullptr; }
  // Net offers `kept`, the KeptTopCopy of the layer run just before this one, when that
  // layer's top is this one's bottom[0]: until this layer's Backward has run, `kept` holds
  // exactly what Forward reads from bottom[0]. A layer that would otherwise keep its own
  // copy of that input (an in-place Scale) reads `kept` instead and returns true.
  virtual bool UseKeptBottomCopy(const Blob<Dtype>* kept) { return false; }
  // An in-place layer on one blob that keeps its input for Backward in an InputExchange,
  // which the net fills before each Forward (core/input_exchange.hpp); null for others. Asked
  // once, when the net is set up and its fusion passes have run.
  virtual InputExchange<Dtype>* input_exchange() { return nullptr; }

  // DescribeLayer of the layer's parameters, for error messages.
  std::string Describe() const;

 protected:
  virtual void Forward_cpu(const BlobVec& bottom, const BlobVec& top) = 0;
  virtual void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                            const BlobVec& bottom) = 0;
#ifdef DOPPIO_WITH_CUDA
  // Without device kernels a layer runs its CPU code; the blobs move to the host and back.
  virtual void Forward_gpu(const BlobVec& bottom, const BlobVec& top) { Forward_cpu(bottom, top); }
  virtual void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                            const BlobVec& bottom) {
    Backward_cpu(top, propagate_down, bottom);
  }
  // The context the _gpu code runs on (set whenever the layer is in GPU mode).
  GpuContext& gpu() const { return *gpu_; }
#endif
  // Puts a layer this one runs internally (SoftmaxWithLoss's Softmax) on the same device.
  void ShareDevice(Layer& inner) const {
    inner.mode_ = mode_;
    inner.gpu_ = gpu_;
  }

  void CheckBlobCounts(const BlobVec& bottom, const BlobVec& top) const;
  // Throws Error when the layer is in GPU mode without a context or without CUDA.
  void CheckDevice() const;
  void SetLossWeights(const BlobVec& top);

  LayerParameter layer_param_;
  Phase phase_;
  std::vector<std::shared_ptr<Blob<Dtype>>> blobs_;
  std::vector<bool> param_propagate_down_;
  std::vector<Dtype> loss_;
  Mode mode_ = Mode::CPU;
  std::string engine_ = "CAFFE";
  Precision precision_request_ = FP32;
  std::shared_ptr<GpuContext> gpu_;
  CpuOptions cpu_options_;
  Rng rng_;
  std::shared_ptr<BatchPosition> batch_position_ = std::make_shared<BatchPosition>();
  std::uint64_t own_position_ = 0;
};

}  // namespace doppio
