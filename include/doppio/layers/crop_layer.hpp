#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Crops bottom[0] to the shape of bottom[1] on the axes from crop_param.axis on, starting at
// crop_param.offset (one value for all cropped axes, or one per axis). bottom[1] only gives
// the shape: it receives no gradient.
template <typename Dtype>
class CropLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit CropLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Crop"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 1; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

 private:
  // Copies the window row by row: from the bottom into the (contiguous) top, or back.
  void CopyWindow(bool bottom_to_top, const Dtype* from, Dtype* to) const;

  int start_axis_ = 2;
  std::vector<int> offsets_;
  std::vector<int> top_shape_;
  std::vector<int> bottom_strides_;
};

}  // namespace doppio
