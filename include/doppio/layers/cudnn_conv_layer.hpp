#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "doppio/device/cudnn.hpp"
#include "doppio/layers/conv_layer.hpp"

namespace doppio {

// Convolution on cuDNN (engine CUDNN, the default on the GPU). Each direction is one cuDNN
// call for the whole batch and every group. Algorithms are chosen per input shape, by
// cuDNN's heuristics or by timing each candidate once (GpuOptions::conv_algo), among those
// whose scratch fits GpuOptions::conv_workspace_limit (measured choices kept in the context's
// ConvAlgoCache file, so that later runs skip the search); float32 may use TF32 tensor cores
// when GpuOptions::tf32_conv. On the CPU it is the CAFFE ConvolutionLayer.
template <typename Dtype>
class CudnnConvolutionLayer : public ConvolutionLayer<Dtype> {
 public:
  using typename ConvolutionLayer<Dtype>::BlobVec;
  explicit CudnnConvolutionLayer(const LayerParameter& param) : ConvolutionLayer<Dtype>(param) {}
  ~CudnnConvolutionLayer() override;
  // fp32 storage; TF32 math where GpuOptions::tf32_conv lets float32 use tensor cores.
  LayerPrecision precision() const override;

 protected:
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  // Sets the descriptors for the current shapes and picks the forward algorithm; the
  // backward ones are picked on the first Backward for a shape.
  void Prepare(const BlobVec& bottom, const BlobVec& top);
  void PrepareBackward(const BlobVec& bottom, const BlobVec& top);
  void SetConvolution(cudnnConvolutionDescriptor_t desc, cudnnMathType_t math);
  // The math type the options allow for Dtype, and whether an algorithm's is acceptable.
  cudnnMathType_t BaseMathType() const;
  // The algorithm cache's key for `direction` ("fwd", "bwd_data", "bwd_filter") at the
  // prepared shapes: everything the choice depends on.
  std::string ProblemKey(const char* direction) const;

  // Parameters live in the net's arena, packed back to back, so their device pointers may
  // lack the 16-byte alignment some cuDNN kernels need; then cuDNN works on aligned copies.
  static bool Aligned(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }
  const Dtype* AlignedParam(int index, Blob<Dtype>* scratch);

  std::vector<int> prepared_shape_;
  Blob<Dtype> aligned_weight_;
  Blob<Dtype> aligned_bias_;
  Blob<Dtype> aligned_weight_diff_;
  Blob<Dtype> aligned_bias_diff_;
  bool backward_prepared_ = false;
  CudnnTensorDesc bottom_desc_;
  CudnnTensorDesc top_desc_;
  CudnnTensorDesc bias_desc_;
  cudnnFilterDescriptor_t filter_desc_ = nullptr;
  // One per direction: each keeps the math type of its own algorithm.
  cudnnConvolutionDescriptor_t fwd_conv_ = nullptr;
  cudnnConvolutionDescriptor_t bwd_data_conv_ = nullptr;
  cudnnConvolutionDescriptor_t bwd_filter_conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t fwd_algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo_ = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
  std::size_t fwd_workspace_ = 0;
  std::size_t bwd_data_workspace_ = 0;
  std::size_t bwd_filter_workspace_ = 0;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
