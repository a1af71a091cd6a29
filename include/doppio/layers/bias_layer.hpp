#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Adds a bias broadcast along the axes of bottom[0] it does not cover. The bias is either a
// learned parameter of shape bottom[0].shape[axis : axis + num_axes] (one bottom; num_axes
// -1 reaches the last axis; filled with bias_param.filler, default constant 0) or bottom[1],
// whose shape must match bottom[0] from axis on (a scalar bias covers everything).
// In-place computation is allowed.
template <typename Dtype>
class BiasLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;

  explicit BiasLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Bias"; }
  int MinBottomBlobs() const override { return 1; }
  int MaxBottomBlobs() const override { return 2; }
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

  int outer_dim_ = 0;
  int bias_dim_ = 0;
  int inner_dim_ = 0;
};

// The axis of `bottom` where a scale or bias blob of `param_num_axes` axes starts, checking
// that the blob's shape matches bottom's there. Throws Error naming `layer` and `field`.
template <typename Dtype>
int BroadcastAxis(const Layer<Dtype>& layer, const char* field, int axis, const Blob<Dtype>& bottom,
                  const Blob<Dtype>& param);

// The shape of a learned scale or bias parameter: bottom.shape[axis : axis + num_axes]
// (num_axes -1: to the last axis). Throws Error naming `layer` and `field`.
template <typename Dtype>
std::vector<int> BroadcastParamShape(const Layer<Dtype>& layer, const char* field, int axis,
                                     int num_axes, const Blob<Dtype>& bottom);

}  // namespace doppio
