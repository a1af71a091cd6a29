#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "doppio/core/gpu_storage.hpp"
#include "doppio/device/cudnn.hpp"
#include "doppio/layers/conv_layer.hpp"

namespace doppio {

// Convolution on cuDNN (engine CUDNN, the default on the GPU). Each direction is one cuDNN
// call for the whole batch and every group. Algorithms are chosen per input shape, by
// cuDNN's heuristics or by timing each candidate once (GpuOptions::conv_algo), among those
// whose scratch fits GpuOptions::conv_workspace_limit (measured choices kept in the context's
// ConvAlgoCache file, so that later runs skip the search); float32 may use TF32 tensor cores
// when GpuOptions::tf32_conv. Under BF16 and FP16 the input, the output, the weights (a copy
// made once per update) and the gradients of the input and weights are 16-bit on tensor cores
// with fp32 sums, as cuDNN's pseudo-half configurations compute them; the weight gradient,
// which cuDNN writes in the filter's type, and the bias are added into the fp32 gradients by
// Doppio's kernels. On the CPU it is the CAFFE ConvolutionLayer.
template <typename Dtype>
class CudnnConvolutionLayer : public ConvolutionLayer<Dtype> {
 public:
  using typename ConvolutionLayer<Dtype>::BlobVec;
  explicit CudnnConvolutionLayer(const LayerParameter& param) : ConvolutionLayer<Dtype>(param) {}
  ~CudnnConvolutionLayer() override;
  // fp32 storage; TF32 math where GpuOptions::tf32_conv lets float32 use tensor cores; bf16
  // or fp16 where the net asks it.
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
  // The input of bottom i and the weights in the storage the layer runs in (16 bits: through
  // the readers, whose copies are aligned).
  const void* InputData(const BlobVec& bottom, int i);
  const void* TopDiffData(const BlobVec& top, int i);
  const void* WeightData();
  void Backward16(const BlobVec& top, const std::vector<bool>& propagate_down,
                  const BlobVec& bottom, void* workspace);
  // Under 16 bits: bias_diff += the sums of dy (16 bits) over images and positions.
  void AddBiasGradient16(const void* top_diff, Dtype* bias_diff);

  GpuStorage storage_ = GpuStorage::kFloat32;  // what Prepare set the descriptors for
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
  GpuStorageReader input_reader_;
  GpuStorageReader weight_reader_;
  GpuStorageReader diff_reader_;
  // Under 16 bits: the weight gradient as cuDNN writes it, ones for the bias sums, and the
  // per-(image, channel) sums.
  std::shared_ptr<SyncedMemory> weight_diff16_;
  std::shared_ptr<SyncedMemory> ones16_;
  Blob<Dtype> bias_sums_;
  Blob<Dtype> image_ones_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
