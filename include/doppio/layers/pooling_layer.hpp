#pragma once

#include <vector>

#include "doppio/core/gpu_storage.hpp"
#include "doppio/core/layer.hpp"

namespace doppio {

// 2-d spatial pooling over (N, C, H, W): MAX, AVE or STOCHASTIC, with Caffe's output-size
// rule (CEIL by default: a partial last window counts, but with padding the last window must
// start inside the image or left padding) and its AVE divisor (the window clipped to the
// padded input, so padding counts as zeros). MAX may produce a second top with the argmax
// index (h * W + w within the plane) of each output, as Caffe does.
template <typename Dtype>
class PoolingLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;
  explicit PoolingLayer(const LayerParameter& param) : Layer<Dtype>(param) {}

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "Pooling"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override {
    return this->layer_param_.pooling_param().pool() == PoolingParameter::MAX ? 2 : 1;
  }
  // MAX and AVE with one top run in 16 bits on the GPU under BF16 and FP16.
  LayerPrecision precision() const override;

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

 protected:  // the cuDNN engine derives from this class
  // One plane each; `part` picks the thread's scratch (see ForPlanes).
  void ForwardMax(const Dtype* in, Dtype* out, int* mask, Dtype* top_mask, int part);
  void MaxRowSse2(const float* in, int ph, float* out, int* index, float* scratch) const;
  void ForwardAve(const Dtype* in, Dtype* out);
  // Adds the plane's AVE gradient into diff.
  void BackwardAve(const Dtype* top_diff, Dtype* diff, int part);
  // The Philox key of STOCHASTIC's draws in TRAIN.
  std::uint64_t StochasticSeed() const;
  // One plane; output o of the plane draws the word first_word + o of the sample at
  // `position` (philox.hpp).
  void ForwardStochasticTrain(const Dtype* in, Dtype* out, int* index, std::uint64_t seed,
                              std::uint64_t position, std::uint64_t first_word);
  void ForwardStochasticTest(const Dtype* in, Dtype* out);

  PoolingParameter::PoolMethod method_ = PoolingParameter::MAX;
  bool global_pooling_ = false;
  int kernel_h_ = 0, kernel_w_ = 0;
  int stride_h_ = 1, stride_w_ = 1;
  int pad_h_ = 0, pad_w_ = 0;
  int num_ = 0, channels_ = 0, height_ = 0, width_ = 0;
  int pooled_height_ = 0, pooled_width_ = 0;
  // MAX: argmax per output (when no mask top is given); STOCHASTIC TRAIN: the sampled index.
  // Both index within the input plane; -1 marks an empty window.
  std::vector<int> index_;
  // AVE: the divisor's width factor per output column.
  std::vector<int> ave_width_;
  // Scratch per part: scratch_per_part_ values (MAX: kernel_h_ padded rows of scratch_row_
  // values; AVE: a row of shares) and a row of indices.
  int scratch_row_ = 0;
  size_t scratch_per_part_ = 0;
  std::vector<Dtype> row_value_;
  std::vector<int> row_index_;

  // Runs fn(plane, part) for every (image, channel) plane, split over the thread pool.
  template <typename Fn>
  void ForPlanes(const Fn& fn);
  bool top_mask_ = false;  // MAX's second top
  // What the GPU kernels run in (GpuStorageOf, or fp32 where they have no 16-bit form).
  GpuStorage gpu_storage() const;
#ifdef DOPPIO_WITH_CUDA
  std::shared_ptr<SyncedMemory> index_gpu_;  // index_ of Forward_gpu, on the device
  GpuStorageReader input_reader_;
  GpuStorageReader diff_reader_;
#endif
};

}  // namespace doppio
