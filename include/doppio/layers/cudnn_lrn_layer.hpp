#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include <cudnn.h>

#include <string>
#include <vector>

#include "doppio/core/gpu_storage.hpp"
#include "doppio/device/cudnn.hpp"
#include "doppio/layers/lrn_layer.hpp"

namespace doppio {

// ACROSS_CHANNELS LRN on cuDNN (engine CUDNN): the same formula, scale = k + alpha / n * sum
// of squares, within cuDNN's limits (local_size 1 to 16, k >= 1e-5, beta >= 0.01); other
// configurations use the CAFFE engine. Backward computes the output again rather than read
// the top, which a later in-place layer may have changed. Under BF16 and FP16 it runs on 16-bit
// data (cuDNN computes in fp32). On the CPU it is the CAFFE LRNLayer.
template <typename Dtype>
class CudnnLRNLayer : public LRNLayer<Dtype> {
 public:
  using typename LRNLayer<Dtype>::BlobVec;
  explicit CudnnLRNLayer(const LayerParameter& param) : LRNLayer<Dtype>(param) {}
  ~CudnnLRNLayer() override;

  static std::string Unsupported(const LayerParameter& param);
  LayerPrecision precision() const override { return StoragePrecision(GpuStorageOf(*this)); }

 protected:
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  void Prepare();

  cudnnLRNDescriptor_t lrn_desc_ = nullptr;
  CudnnTensorDesc desc_;  // bottom and top have the same shape
  GpuStorageReader input_reader_;
  GpuStorageReader diff_reader_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
