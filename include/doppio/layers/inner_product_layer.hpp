#pragma once

#include <vector>

#include "doppio/core/blob.hpp"
#include "doppio/core/gpu_storage.hpp"
#include "doppio/core/layer.hpp"

namespace doppio {

// Fully connected layer ("InnerProduct"): the bottom is viewed as an M x K matrix, with M the
// product of the axes before inner_product_param.axis and K the product of the rest, and
// top = bottom * W^T + bias, shape (axes before axis..., num_output). Weights are stored as
// (num_output, K), or as (K, num_output) when transpose is true.
template <typename Dtype>
class InnerProductLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;
  explicit InnerProductLayer(const LayerParameter& param) : Layer<Dtype>(param) {}

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "InnerProduct"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  // On the GPU under BF16 and FP16: 16-bit input, weights (a copy made once per update) and
  // output, products accumulated in fp32 on tensor cores, fp32 weight gradients.
  LayerPrecision precision() const override { return StoragePrecision(GpuStorageOf(*this)); }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
  // BF16 and FP16 (Dtype float only).
  void Forward_gpu16(const BlobVec& bottom, const BlobVec& top, GpuStorage storage);
  void Backward_gpu16(const BlobVec& top, const std::vector<bool>& propagate_down,
                      const BlobVec& bottom, GpuStorage storage);
#endif

 protected:  // the oneDNN engine derives from this class
  int axis_ = 1;
  int M_ = 0;  // rows (samples)
  int K_ = 0;  // inputs per sample
  int N_ = 0;  // num_output
  bool bias_term_ = true;
  bool transpose_ = false;
  Blob<Dtype> bias_multiplier_;  // M ones
#ifdef DOPPIO_WITH_CUDA
  GpuStorageReader input_reader_;
  GpuStorageReader weight_reader_;
  GpuStorageReader diff_reader_;
#endif
};

}  // namespace doppio
