#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Caffe's Im2col: lays out every convolution window of the input as a column, reading the
// window from convolution_param (kernel, stride, pad, dilation, axis) as Convolution does.
// An input (N, C, H, W) gives (N, C * kernel_h * kernel_w, out_h, out_w); Backward sums each
// column's gradient back into the positions it read (col2im).
template <typename Dtype>
class Im2colLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit Im2colLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "Im2col"; }

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

 private:
  int channel_axis_ = 1;
  int kernel_h_ = 0, kernel_w_ = 0;
  int stride_h_ = 1, stride_w_ = 1;
  int pad_h_ = 0, pad_w_ = 0;
  int dilation_h_ = 1, dilation_w_ = 1;
  // From the bottom shape.
  int num_ = 0;
  int channels_ = 0;
  int height_ = 0, width_ = 0;
  int bottom_dim_ = 0;  // values per image in the bottom
  int top_dim_ = 0;     // and in the top
};

}  // namespace doppio
