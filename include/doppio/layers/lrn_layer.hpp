#pragma once

#include <vector>

#include "doppio/core/blob.hpp"
#include "doppio/core/layer.hpp"

namespace doppio {

// Local response normalisation over (N, C, H, W): top = bottom * scale^-beta.
// ACROSS_CHANNELS: scale = k + alpha / n * (sum of squares over the n channels centred on
//   this one, clipped at the ends).
// WITHIN_CHANNEL: scale = k + alpha / n^2 * (sum of squares over the n x n window centred on
//   this position, zero padded) -- the average Caffe's AVE pooling of the squares gives.
// n = local_size must be odd.
template <typename Dtype>
class LRNLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;
  explicit LRNLayer(const LayerParameter& param) : Layer<Dtype>(param) {}

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "LRN"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

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
  // Work space for one image; Forward and Backward split the batch over the thread pool, and
  // every part has its own.
  struct Work {
    Dtype* accum;  // one plane: running window sum
    Dtype* power;  // scale^-beta
    Dtype* ratio;  // top_diff * top / scale
    Dtype* row;    // one plane: horizontal pass of the box sum
    Dtype* scale;  // one image: k + alpha / n * (sum of squares over the window)
  };
  // Sizes the work space for `parts` parts.
  void PrepareWork(int parts);
  Work WorkOf(int part);

  // One image's scale into work.scale. Backward computes it again from the input rather than
  // keeping a bottom-sized copy from Forward (as Caffe does): the same code on the same input,
  // so the same values, bit for bit.
  void CrossChannelScale(const Dtype* in, const Work& work);
  void WithinChannelScale(const Dtype* in, const Work& work);
  void CrossChannelBackward(const Dtype* in, const Dtype* top_diff, const Dtype* scale,
                            Dtype* bottom_diff, const Work& work);
  void WithinChannelBackward(const Dtype* in, const Dtype* top_diff, const Dtype* scale,
                             Dtype* bottom_diff, const Work& work);
  // out = sum of in over the size x size window around each position (zero padded).
  void BoxSum(const Dtype* in, Dtype* out, Dtype* rows);
  // out[i] = s[i]^-beta, with fast paths for the common betas.
  void NegativePower(int n, const Dtype* s, Dtype* out) const;

  int size_ = 5;
  int pre_pad_ = 2;
  Dtype alpha_ = 1, beta_ = 0.75, k_ = 1;
  LRNParameter::NormRegion region_ = LRNParameter::ACROSS_CHANNELS;
  int num_ = 0, channels_ = 0, height_ = 0, width_ = 0;

  Blob<Dtype> scale_;  // the GPU kernels' scale, kept from Forward for Backward
  // Work spaces, one after the other: per part, the sizes below.
  std::vector<Dtype> work_;
  size_t plane_size_ = 0, image_size_ = 0, row_size_ = 0, work_size_ = 0;
#ifdef DOPPIO_WITH_CUDA
  Blob<Dtype> ratio_gpu_;  // WITHIN_CHANNEL Backward_gpu: top_diff * top / scale
#endif
};

}  // namespace doppio
