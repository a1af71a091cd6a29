#pragma once

#include <memory>
#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Spatial pyramid pooling, as Caffe's SPP: level l of spp_param.pyramid_height pools the
// (N, C, H, W) input into 2^l x 2^l bins (kernel ceil(H / 2^l), stride the kernel, padding
// that centres the bins on the input), with spp_param.pool. One level gives the pooling's
// (N, C, 1, 1); more give (N, C * sum of the levels' bins), each level flattened and
// concatenated in order. Built, as in Caffe, from Split, Pooling, Flatten and Concat layers
// run inside this one (on its device).
template <typename Dtype>
class SPPLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit SPPLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "SPP"; }

  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override { RunForward(bottom, top); }
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    RunBackward(top, propagate_down, bottom);
  }
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

 private:
  // The inner layers run where this one does: their own Forward and Backward pick the device.
  void RunForward(const BlobVec& bottom, const BlobVec& top);
  void RunBackward(const BlobVec& top, const std::vector<bool>& propagate_down,
                   const BlobVec& bottom);
  // The Pooling layer of one level for an input of height x width.
  LayerParameter LevelPooling(int level, int height, int width) const;
  // Creates the pooling layers for the bottom's spatial size and sets every inner layer up.
  void BuildForSize(const BlobVec& bottom, const BlobVec& top);
  void ShareDeviceWithInner();

  int pyramid_height_ = 0;
  int height_ = 0, width_ = 0;
  std::shared_ptr<Layer<Dtype>> split_;
  std::vector<std::shared_ptr<Layer<Dtype>>> pooling_;
  std::vector<std::shared_ptr<Layer<Dtype>>> flatten_;
  std::shared_ptr<Layer<Dtype>> concat_;
  // The blobs between them, per level: split output, pooled, flattened.
  std::vector<std::unique_ptr<Blob<Dtype>>> split_tops_, pooled_, flat_;
};

}  // namespace doppio
