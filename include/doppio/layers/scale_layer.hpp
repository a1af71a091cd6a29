#pragma once

#include <memory>
#include <vector>

#include "doppio/core/layer.hpp"
#include "doppio/layers/bias_layer.hpp"

namespace doppio {

// Multiplies bottom[0] by a scale broadcast along the axes it does not cover, optionally
// adding a learned bias (scale_param.bias_term). The scale is either a learned parameter of
// shape bottom[0].shape[axis : axis + num_axes] (one bottom; filled with scale_param.filler,
// default constant 1) or bottom[1], which then takes a gradient too. Parameter blobs: the
// scale (if learned), then the bias (if bias_term). In-place computation is allowed.
template <typename Dtype>
class ScaleLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;

  explicit ScaleLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Scale"; }
  int MinBottomBlobs() const override { return 1; }
  int MaxBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  // In place, the input is then read from `kept` and not copied.
  bool UseKeptBottomCopy(const Blob<Dtype>* kept) override;

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

  // Adds the bias in place on the top; its parameter blob is shared with blobs_.
  std::unique_ptr<BiasLayer<Dtype>> bias_layer_;
  BlobVec bias_bottom_;
  int bias_param_id_ = -1;
  // In-place Forward overwrites the input that the scale gradient needs: keep a copy, or
  // read the one the layer before keeps (kept_input_, set by UseKeptBottomCopy).
  Blob<Dtype> saved_input_;
  const Blob<Dtype>* kept_input_ = nullptr;
  bool in_place_ = false;  // bottom[0] is top[0] (known from LayerSetUp)
  int outer_dim_ = 0;
  int scale_dim_ = 0;
  int inner_dim_ = 0;
};

}  // namespace doppio
