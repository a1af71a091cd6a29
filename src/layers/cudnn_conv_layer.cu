#ifdef DOPPIO_WITH_CUDNN

#include <glog/logging.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>

#include "doppio/core/layer_kernels.cuh"
#include "doppio/device/conv_algo_cache.hpp"
#include "doppio/device/gpu_half.cuh"
#include "doppio/layers/cudnn_conv_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
// Device scratch for a measured algorithm search, returned to the allocator afterwards.
class SearchScratch {
 public:
  SearchScratch(GpuContext& gpu, std::size_t bytes) : gpu_(gpu) {
    ptr_ = gpu_.allocator().Allocate(bytes);
    bytes_ = bytes;
  }
  // As much workspace as the device gives, up to `limit`: halves the request on failure.
  static SearchScratch Workspace(GpuContext& gpu, std::size_t limit) {
    std::size_t bytes = limit;
    while (bytes >= (std::size_t(1) << 20)) {
      try {
        return SearchScratch(gpu, bytes);
      } catch (const Error&) {
        bytes /= 2;
      }
    }
    return SearchScratch(gpu, 0);
  }
  SearchScratch(SearchScratch&& other) noexcept
      : gpu_(other.gpu_), ptr_(other.ptr_), bytes_(other.bytes_) {
    other.ptr_ = nullptr;
  }
  ~SearchScratch() {
    if (ptr_) gpu_.allocator().Free(ptr_);
  }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  GpuContext& gpu_;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// The best-ranked candidate that ran, fits `limit`, and (when `fma_only`) keeps to plain
// FMA math; null when there is none.
template <typename Perf>
const Perf* Pick(const Perf* perf, int returned, std::size_t limit, bool fma_only) {
  for (int i = 0; i < returned; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > limit) continue;
    if (fma_only && perf[i].mathType != CUDNN_FMA_MATH) continue;
    return &perf[i];
  }
  return nullptr;
}

// With --cudnn_algo=measure and a cache file: the choice measured for `key` before.
std::optional<ConvAlgoCache::Choice> CachedChoice(GpuContext& gpu, const std::string& key) {
  ConvAlgoCache* cache = gpu.conv_algo_cache();
  return cache ? cache->Find(key) : std::nullopt;
}

void RememberChoice(GpuContext& gpu, const std::string& key, int algo, int math) {
  if (ConvAlgoCache* cache = gpu.conv_algo_cache()) cache->Add(key, {algo, math});
}

// y (n images of `channels` x `spatial`, 16 bits) += bias (fp32), rounded once.
template <typename S>
__global__ void AddChannelBias16(long long count, int channels, int spatial, const float* bias,
                                 S* y) {
  DOPPIO_KERNEL_LOOP(i, count) {
    y[i] = StoreAs<S>::From(Load(y[i]) + bias[(i / spatial) % channels]);
  }
}

// sum (fp32) += widened (16 bits).
template <typename S>
__global__ void AddWidened(long long count, const S* widened, float* sum) {
  DOPPIO_KERNEL_LOOP(i, count) { sum[i] += Load(widened[i]); }
}

template <typename S>
__global__ void FillOnes(long long count, S* y) {
  DOPPIO_KERNEL_LOOP(i, count) { y[i] = StoreAs<S>::From(1.f); }
}
}  // namespace

template <typename Dtype>
std::string CudnnConvolutionLayer<Dtype>::ProblemKey(const char* direction) const {
  std::ostringstream key;
  const char* type = storage_ != GpuStorage::kFloat32    ? GpuStorageName(storage_)
                     : std::is_same<Dtype, float>::value ? "f32"
                                                         : "f64";
  key << direction << ":" << type << ":n" << this->num_ << "c" << this->channels_ << "h"
      << this->input_shape_[0] << "w" << this->input_shape_[1] << ":k" << this->num_output_ << "x"
      << this->kernel_h_ << "x" << this->kernel_w_ << "p" << this->pad_h_ << "," << this->pad_w_
      << "s" << this->stride_h_ << "," << this->stride_w_ << "d" << this->dilation_h_ << ","
      << this->dilation_w_ << "g" << this->group_ << ":math" << BaseMathType() << ":ws"
      << this->gpu().options().conv_workspace_limit;
  return key.str();
}

template <typename Dtype>
void CudnnConvolutionLayer<Dtype>::SetConvolution(cudnnConvolutionDescriptor_t desc,
                                                  cudnnMathType_t math) {
  DOPPIO_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      desc, this->pad_h_, this->pad_w_, this->stride_h_, this->stride_w_, this->dilation_h_,
      this->dilation_w_, CUDNN_CROSS_CORRELATION, CudnnDataType<Dtype>::kType));
  DOPPIO_CUDNN_CHECK(cudnnSetConvolutionGroupCount(desc, this->group_));
  DOPPIO_CUDNN_CHECK(cudnnSetConvolutionMathType(desc, math));
}

template <typename Dtype>
void CudnnConvolutionLayer<Dtype>::Prepare(const BlobVec& bottom, const BlobVec& top) {
  if (bottom[0]->shape() == prepared_shape_) return;
  GpuContext& gpu = this->gpu();
  storage_ = GpuStorageOf(*this);
  const cudnnDataType_t type = CudnnStorageType<Dtype>(storage_);
  cudnnHandle_t handle = gpu.cudnn();
  if (!filter_desc_) {
    DOPPIO_CUDNN_CHECK(cudnnCreateFilterDescriptor(&filter_desc_));
    DOPPIO_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&fwd_conv_));
    DOPPIO_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&bwd_data_conv_));
    DOPPIO_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&bwd_filter_conv_));
  }
  // The images are (num_, channels, H, W) whatever axes precede the channel axis.
  bottom_desc_.Set4d(type, this->num_, this->channels_, this->input_shape_[0],
                     this->input_shape_[1]);
  top_desc_.Set4d(type, this->num_, this->num_output_, this->output_shape_[0],
                  this->output_shape_[1]);
  bias_desc_.Set4d<Dtype>(1, this->num_output_, 1, 1);
  DOPPIO_CUDNN_CHECK(cudnnSetFilter4dDescriptor(filter_desc_, type, CUDNN_TENSOR_NCHW,
                                                this->num_output_, this->channels_ / this->group_,
                                                this->kernel_h_, this->kernel_w_));
  const cudnnMathType_t base = BaseMathType();
  SetConvolution(fwd_conv_, base);
  SetConvolution(bwd_data_conv_, base);
  SetConvolution(bwd_filter_conv_, base);

  const GpuOptions& options = gpu.options();
  const bool fma_only = base == CUDNN_FMA_MATH;
  const std::string fwd_key = ProblemKey("fwd");
  std::size_t limit = options.conv_workspace_limit;
  if (const auto cached = CachedChoice(gpu, fwd_key)) {
    fwd_algo_ = static_cast<cudnnConvolutionFwdAlgo_t>(cached->algo);
    DOPPIO_CUDNN_CHECK(
        cudnnSetConvolutionMathType(fwd_conv_, static_cast<cudnnMathType_t>(cached->math)));
  } else {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    const bool measure = options.conv_algo == ConvAlgoSearch::kMeasure;
    if (measure) {
      SearchScratch output(gpu, sizeof(Dtype) * static_cast<std::size_t>(top[0]->count()));
      SearchScratch workspace = SearchScratch::Workspace(gpu, limit);
      limit = workspace.bytes();
      DOPPIO_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
          handle, bottom_desc_.get(), InputData(bottom, 0), filter_desc_, WeightData(), fwd_conv_,
          top_desc_.get(), output.get(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf,
          workspace.get(), workspace.bytes()));
    } else {
      DOPPIO_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          handle, bottom_desc_.get(), filter_desc_, fwd_conv_, top_desc_.get(),
          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
    }
    if (const auto* pick = Pick(perf, returned, limit, fma_only)) {
      fwd_algo_ = pick->algo;
      DOPPIO_CUDNN_CHECK(cudnnSetConvolutionMathType(fwd_conv_, pick->mathType));
      if (measure) RememberChoice(gpu, fwd_key, pick->algo, pick->mathType);
    } else {
      fwd_algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;  // needs no workspace
      LOG(WARNING) << this->Describe() << ": no cuDNN forward algorithm fits the workspace "
                   << "limit of " << limit << " bytes (--cudnn_workspace_mb); it runs the "
                   << "implicit GEMM, which needs none";
    }
  }
  DOPPIO_CUDNN_CHECK(
      cudnnGetConvolutionForwardWorkspaceSize(handle, bottom_desc_.get(), filter_desc_, fwd_conv_,
                                              top_desc_.get(), fwd_algo_, &fwd_workspace_));
  VLOG(1) << this->Describe() << ": cuDNN forward algorithm " << fwd_algo_ << ", workspace "
          << fwd_workspace_ << " bytes, input " << bottom[0]->shape_string();
  prepared_shape_ = bottom[0]->shape();
  backward_prepared_ = false;
}

template <typename Dtype>
void CudnnConvolutionLayer<Dtype>::PrepareBackward(const BlobVec& bottom, const BlobVec& top) {
  if (backward_prepared_) return;
  GpuContext& gpu = this->gpu();
  cudnnHandle_t handle = gpu.cudnn();
  const GpuOptions& options = gpu.options();
  const bool fma_only = BaseMathType() == CUDNN_FMA_MATH;
  const bool measure = options.conv_algo == ConvAlgoSearch::kMeasure;

  // Gradient with respect to the input.
  {
    const std::string key = ProblemKey("bwd_data");
    std::size_t limit = options.conv_workspace_limit;
    if (const auto cached = CachedChoice(gpu, key)) {
      bwd_data_algo_ = static_cast<cudnnConvolutionBwdDataAlgo_t>(cached->algo);
      DOPPIO_CUDNN_CHECK(
          cudnnSetConvolutionMathType(bwd_data_conv_, static_cast<cudnnMathType_t>(cached->math)));
    } else {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      int returned = 0;
      if (measure) {
        SearchScratch dx(gpu, sizeof(Dtype) * static_cast<std::size_t>(bottom[0]->count()));
        SearchScratch workspace = SearchScratch::Workspace(gpu, limit);
        limit = workspace.bytes();
        DOPPIO_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
            handle, filter_desc_, WeightData(), top_desc_.get(), TopDiffData(top, 0),
            bwd_data_conv_, bottom_desc_.get(), dx.get(), CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
            &returned, perf, workspace.get(), workspace.bytes()));
      } else {
        DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            handle, filter_desc_, top_desc_.get(), bwd_data_conv_, bottom_desc_.get(),
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf));
      }
      if (const auto* pick = Pick(perf, returned, limit, fma_only)) {
        bwd_data_algo_ = pick->algo;
        DOPPIO_CUDNN_CHECK(cudnnSetConvolutionMathType(bwd_data_conv_, pick->mathType));
        if (measure) RememberChoice(gpu, key, pick->algo, pick->mathType);
      } else {
        bwd_data_algo_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
        LOG(WARNING) << this->Describe() << ": no cuDNN backward-data algorithm fits the "
                     << "workspace limit of " << limit << " bytes (--cudnn_workspace_mb); it "
                     << "runs algorithm 0, which needs none";
      }
    }
    DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        handle, filter_desc_, top_desc_.get(), bwd_data_conv_, bottom_desc_.get(), bwd_data_algo_,
        &bwd_data_workspace_));
  }
  // Gradient with respect to the weights (the search writes into scratch, never into the
  // accumulating weight diff).
  {
    const std::string key = ProblemKey("bwd_filter");
    std::size_t limit = options.conv_workspace_limit;
    if (const auto cached = CachedChoice(gpu, key)) {
      bwd_filter_algo_ = static_cast<cudnnConvolutionBwdFilterAlgo_t>(cached->algo);
      DOPPIO_CUDNN_CHECK(cudnnSetConvolutionMathType(bwd_filter_conv_,
                                                     static_cast<cudnnMathType_t>(cached->math)));
    } else {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      int returned = 0;
      if (measure) {
        SearchScratch dw(gpu, sizeof(Dtype) * static_cast<std::size_t>(this->blobs_[0]->count()));
        SearchScratch workspace = SearchScratch::Workspace(gpu, limit);
        limit = workspace.bytes();
        DOPPIO_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
            handle, bottom_desc_.get(), InputData(bottom, 0), top_desc_.get(), TopDiffData(top, 0),
            bwd_filter_conv_, filter_desc_, dw.get(), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
            &returned, perf, workspace.get(), workspace.bytes()));
      } else {
        DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            handle, bottom_desc_.get(), top_desc_.get(), bwd_filter_conv_, filter_desc_,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perf));
      }
      if (const auto* pick = Pick(perf, returned, limit, fma_only)) {
        bwd_filter_algo_ = pick->algo;
        DOPPIO_CUDNN_CHECK(cudnnSetConvolutionMathType(bwd_filter_conv_, pick->mathType));
        if (measure) RememberChoice(gpu, key, pick->algo, pick->mathType);
      } else {
        bwd_filter_algo_ = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
        LOG(WARNING) << this->Describe() << ": no cuDNN backward-filter algorithm fits the "
                     << "workspace limit of " << limit << " bytes (--cudnn_workspace_mb); it "
                     << "runs algorithm 0, which needs none";
      }
    }
    DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        handle, bottom_desc_.get(), top_desc_.get(), bwd_filter_conv_, filter_desc_,
        bwd_filter_algo_, &bwd_filter_workspace_));
  }
  VLOG(1) << this->Describe() << ": cuDNN backward data algorithm " << bwd_data_algo_
          << " (workspace " << bwd_data_workspace_ << " bytes), filter algorithm "
          << bwd_filter_algo_ << " (workspace " << bwd_filter_workspace_ << " bytes)";
  backward_prepared_ = true;
}

template <typename Dtype>
const Dtype* CudnnConvolutionLayer<Dtype>::AlignedParam(int index, Blob<Dtype>* scratch) {
  GpuContext& gpu = this->gpu();
  const Blob<Dtype>& param = *this->blobs_[index];
  const Dtype* data = param.gpu_data(gpu);
  if (Aligned(data)) return data;
  scratch->ReshapeLike(param);
  Dtype* copy = scratch->mutable_gpu_data(gpu);  // a block of its own: aligned
  gpu_copy(gpu, param.count(), data, copy);
  return copy;
}

template <typename Dtype>
const void* CudnnConvolutionLayer<Dtype>::InputData(const BlobVec& bottom, int i) {
  GpuContext& gpu = this->gpu();
  if (storage_ == GpuStorage::kFloat32) return bottom[i]->gpu_data(gpu);
  return input_reader_.Read(bottom[i]->data(), storage_, gpu);
}

template <typename Dtype>
const void* CudnnConvolutionLayer<Dtype>::TopDiffData(const BlobVec& top, int i) {
  GpuContext& gpu = this->gpu();
  if (storage_ == GpuStorage::kFloat32) return top[i]->gpu_diff(gpu);
  return diff_reader_.Read(top[i]->diff(), storage_, gpu);
}

template <typename Dtype>
const void* CudnnConvolutionLayer<Dtype>::WeightData() {
  if (storage_ == GpuStorage::kFloat32) return AlignedParam(0, &aligned_weight_);
  return weight_reader_.Read(this->blobs_[0]->data(), storage_, this->gpu());
}

template <typename Dtype>
void CudnnConvolutionLayer<Dtype>::AddBiasGradient16(const void* top_diff, Dtype* bias_diff) {
  GpuContext& gpu = this->gpu();
  const int spatial = this->output_shape_[0] * this->output_shape_[1];
  const int planes = this->num_ * this->num_output_;
  if (!ones16_ || ones16_->size() < static_cast<std::size_t>(spatial) * 2) {
    ones16_ = std::make_shared<SyncedMemory>(static_cast<std::size_t>(spatial) * 2);
    // Bytes only this layer reads (tagged canonical: nothing widens them).
    void* ones = ones16_->mutable_raw_gpu_data(gpu, GpuStorage::kFloat32);
    WithStorageType<float>(storage_, [&](auto type) {
      using S = decltype(type);
      LaunchKernel("FillOnes", gpu, spatial, FillOnes<S>, static_cast<long long>(spatial),
                   static_cast<S*>(ones));
    });
  }
  // Per (image, channel): the plane's sum, an (N C) x spatial product with ones; then over
  // the images.
  bias_sums_.Reshape({planes});
  gpu_gemm_ex(gpu, Trans::kNo, Trans::kNo, planes, 1, spatial, 1.f, storage_, top_diff,
              ones16_->raw_gpu_data(gpu), 0.f, GpuStorage::kFloat32,
              bias_sums_.mutable_gpu_data(gpu));
  if (image_ones_.count() != this->num_) {
    image_ones_.Reshape({this->num_});
    gpu_set(gpu, this->num_, Dtype(1), image_ones_.mutable_gpu_data(gpu));
  }
  gpu_gemv<Dtype>(gpu, Trans::kYes, this->num_, this->num_output_, Dtype(1),
                  bias_sums_.gpu_data(gpu), image_ones_.gpu_data(gpu), Dtype(1), bias_diff);
}

template <typename Dtype>
void CudnnConvolutionLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (this->num_ == 0) return;
  GpuContext& gpu = this->gpu();
  Prepare(bottom, top);
  cudnnHandle_t handle = gpu.cudnn();
  const void* weight = WeightData();
  void* workspace = fwd_workspace_ > 0 ? gpu.Workspace(fwd_workspace_) : nullptr;
  if (storage_ != GpuStorage::kFloat32) {
    const int spatial = this->output_shape_[0] * this->output_shape_[1];
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      void* top_data = top[i]->data()->mutable_raw_gpu_data(gpu, storage_);
      DOPPIO_CUDNN_CHECK(cudnnConvolutionForward(
          handle, CudnnScalar<float>::one(), bottom_desc_.get(), InputData(bottom, i), filter_desc_,
          weight, fwd_conv_, fwd_algo_, workspace, fwd_workspace_, CudnnScalar<float>::zero(),
          top_desc_.get(), top_data));
      if (!this->bias_term_) continue;
      const auto* bias = reinterpret_cast<const float*>(this->blobs_[1]->gpu_data(gpu));
      const long long count = top[i]->count();
      WithStorageType<float>(storage_, [&](auto type) {
        using S = decltype(type);
        LaunchKernel("AddChannelBias16", gpu, count, AddChannelBias16<S>, count, this->num_output_,
                     spatial, bias, static_cast<S*>(top_data));
      });
    }
    return;
  }
  const Dtype* bias = this->bias_term_ ? AlignedParam(1, &aligned_bias_) : nullptr;
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    Dtype* top_data = top[i]->mutable_gpu_data(gpu);
    DOPPIO_CUDNN_CHECK(cudnnConvolutionForward(
        handle, CudnnScalar<Dtype>::one(), bottom_desc_.get(), bottom[i]->gpu_data(gpu),
        filter_desc_, weight, fwd_conv_, fwd_algo_, workspace, fwd_workspace_,
        CudnnScalar<Dtype>::zero(), top_desc_.get(), top_data));
    if (bias) {
      DOPPIO_CUDNN_CHECK(cudnnAddTensor(handle, CudnnScalar<Dtype>::one(), bias_desc_.get(), bias,
                                        CudnnScalar<Dtype>::one(), top_desc_.get(), top_data));
    }
  }
}

template <typename Dtype>
void CudnnConvolutionLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                                const std::vector<bool>& propagate_down,
                                                const BlobVec& bottom) {
  if (this->num_ == 0) return;
  GpuContext& gpu = this->gpu();
  Prepare(bottom, top);
  PrepareBackward(bottom, top);
  cudnnHandle_t handle = gpu.cudnn();
  const bool weight_grad = this->param_propagate_down(0);
  const bool bias_grad = this->bias_term_ && this->param_propagate_down(1);
  const bool data_grad =
      std::find(propagate_down.begin(), propagate_down.end(), true) != propagate_down.end();
  const std::size_t workspace_bytes =
      std::max(weight_grad ? bwd_filter_workspace_ : 0, data_grad ? bwd_data_workspace_ : 0);
  void* workspace = workspace_bytes > 0 ? gpu.Workspace(workspace_bytes) : nullptr;
  if (storage_ != GpuStorage::kFloat32) {
    Backward16(top, propagate_down, bottom, workspace);
    return;
  }
  const Dtype* weight = AlignedParam(0, &aligned_weight_);
  // Gradients accumulate in place when the diff is aligned, else in an aligned scratch that
  // is added to it at the end.
  Dtype* weight_diff = nullptr;
  Dtype* bias_diff = nullptr;
  if (weight_grad) {
    weight_diff = this->blobs_[0]->mutable_gpu_diff(gpu);
    if (!Aligned(weight_diff)) {
      aligned_weight_diff_.ReshapeLike(*this->blobs_[0]);
      weight_diff = aligned_weight_diff_.mutable_gpu_diff(gpu);
      gpu_set(gpu, aligned_weight_diff_.count(), Dtype(0), weight_diff);
    }
  }
  if (bias_grad) {
    bias_diff = this->blobs_[1]->mutable_gpu_diff(gpu);
    if (!Aligned(bias_diff)) {
      aligned_bias_diff_.ReshapeLike(*this->blobs_[1]);
      bias_diff = aligned_bias_diff_.mutable_gpu_diff(gpu);
      gpu_set(gpu, aligned_bias_diff_.count(), Dtype(0), bias_diff);
    }
  }
  for (std::size_t i = 0; i < top.size(); ++i) {
    const Dtype* top_diff = top[i]->gpu_diff(gpu);
    // Parameter gradients accumulate (beta 1); the input gradient is overwritten (beta 0).
    if (bias_grad) {
      DOPPIO_CUDNN_CHECK(
          cudnnConvolutionBackwardBias(handle, CudnnScalar<Dtype>::one(), top_desc_.get(), top_diff,
                                       CudnnScalar<Dtype>::one(), bias_desc_.get(), bias_diff));
    }
    if (weight_grad) {
      DOPPIO_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
          handle, CudnnScalar<Dtype>::one(), bottom_desc_.get(), bottom[i]->gpu_data(gpu),
          top_desc_.get(), top_diff, bwd_filter_conv_, bwd_filter_algo_, workspace,
          bwd_filter_workspace_, CudnnScalar<Dtype>::one(), filter_desc_, weight_diff));
    }
    if (propagate_down[i]) {
      DOPPIO_CUDNN_CHECK(cudnnConvolutionBackwardData(
          handle, CudnnScalar<Dtype>::one(), filter_desc_, weight, top_desc_.get(), top_diff,
          bwd_data_conv_, bwd_data_algo_, workspace, bwd_data_workspace_,
          CudnnScalar<Dtype>::zero(), bottom_desc_.get(), bottom[i]->mutable_gpu_diff(gpu)));
    }
  }
  if (weight_grad && weight_diff != this->blobs_[0]->mutable_gpu_diff(gpu)) {
    gpu_axpy(gpu, this->blobs_[0]->count(), Dtype(1), static_cast<const Dtype*>(weight_diff),
             this->blobs_[0]->mutable_gpu_diff(gpu));
  }
  if (bias_grad && bias_diff != this->blobs_[1]->mutable_gpu_diff(gpu)) {
    gpu_axpy(gpu, this->blobs_[1]->count(), Dtype(1), static_cast<const Dtype*>(bias_diff),
             this->blobs_[1]->mutable_gpu_diff(gpu));
  }
}

template <typename Dtype>
void CudnnConvolutionLayer<Dtype>::Backward16(const BlobVec& top,
                                              const std::vector<bool>& propagate_down,
                                              const BlobVec& bottom, void* workspace) {
  GpuContext& gpu = this->gpu();
  cudnnHandle_t handle = gpu.cudnn();
  const void* weight = WeightData();
  const long long weight_count = this->blobs_[0]->count();
  for (std::size_t i = 0; i < top.size(); ++i) {
    const void* top_diff = TopDiffData(top, static_cast<int>(i));
    if (this->bias_term_ && this->param_propagate_down(1)) {
      AddBiasGradient16(top_diff, this->blobs_[1]->mutable_gpu_diff(gpu));
    }
    if (this->param_propagate_down(0)) {
      // cuDNN writes the weight gradient in the filter's type: into scratch, then added to
      // the fp32 gradient.
      const std::size_t bytes = static_cast<std::size_t>(weight_count) * 2;
      if (!weight_diff16_ || weight_diff16_->size() < bytes) {
        weight_diff16_ = std::make_shared<SyncedMemory>(bytes);
      }
      void* dw = weight_diff16_->mutable_raw_gpu_data(gpu, GpuStorage::kFloat32);
      DOPPIO_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
          handle, CudnnScalar<float>::one(), bottom_desc_.get(),
          InputData(bottom, static_cast<int>(i)), top_desc_.get(), top_diff, bwd_filter_conv_,
          bwd_filter_algo_, workspace, bwd_filter_workspace_, CudnnScalar<float>::zero(),
          filter_desc_, dw));
      auto* weight_diff = reinterpret_cast<float*>(this->blobs_[0]->mutable_gpu_diff(gpu));
      WithStorageType<float>(storage_, [&](auto type) {
        using S = decltype(type);
        LaunchKernel("AddWidened", gpu, weight_count, AddWidened<S>, weight_count,
                     static_cast<const S*>(dw), weight_diff);
      });
    }
    if (propagate_down[i]) {
      DOPPIO_CUDNN_CHECK(cudnnConvolutionBackwardData(
          handle, CudnnScalar<float>::one(), filter_desc_, weight, top_desc_.get(), top_diff,
          bwd_data_conv_, bwd_data_algo_, workspace, bwd_data_workspace_,
          CudnnScalar<float>::zero(), bottom_desc_.get(),
          bottom[i]->diff()->mutable_raw_gpu_data(gpu, storage_)));
    }
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(CudnnConvolutionLayer);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
