#ifdef DOPPIO_WITH_CUDNN

#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/cudnn_lrn_layer.hpp"

namespace doppio {

template <typename Dtype>
void CudnnLRNLayer<Dtype>::Prepare() {
  if (!lrn_desc_) {
    DOPPIO_CUDNN_CHECK(cudnnCreateLRNDescriptor(&lrn_desc_));
    // cuDNN divides alpha by the window size itself, as Caffe's formula does.
    DOPPIO_CUDNN_CHECK(
        cudnnSetLRNDescriptor(lrn_desc_, this->size_, this->alpha_, this->beta_, this->k_));
  }
  desc_.Set4d(CudnnStorageType<Dtype>(GpuStorageOf(*this)), this->num_, this->channels_,
              this->height_, this->width_);
}

template <typename Dtype>
void CudnnLRNLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (top[0]->count() == 0) return;
  Prepare();
  GpuContext& gpu = this->gpu();
  const GpuStorage storage = GpuStorageOf(*this);
  // 16-bit data takes float scaling factors, as float data does.
  const void* x = storage == GpuStorage::kFloat32
                      ? bottom[0]->data()->gpu_data(gpu)
                      : input_reader_.Read(bottom[0]->data(), storage, gpu);
  DOPPIO_CUDNN_CHECK(cudnnLRNCrossChannelForward(
      gpu.cudnn(), lrn_desc_, CUDNN_LRN_CROSS_CHANNEL_DIM1, CudnnScalar<Dtype>::one(), desc_.get(),
      x, CudnnScalar<Dtype>::zero(), desc_.get(),
      top[0]->data()->mutable_raw_gpu_data(gpu, storage)));
}

template <typename Dtype>
void CudnnLRNLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                        const BlobVec& bottom) {
  if (!propagate_down[0] || top[0]->count() == 0) return;
  Prepare();
  GpuContext& gpu = this->gpu();
  // cuDNN's backward takes the layer's output, but a later layer running in place on the top
  // (Dropout, Scale) has rewritten it by now, which would give a wrong gradient (the hazard
  // of Caffe issue 2688). The output is computed again from the bottom into the shared
  // scratch: one more pass of this cheap layer and no memory held per layer, and right
  // whatever follows it (a copy kept from Forward would hold a top-sized buffer per layer;
  // the CAFFE engine keeps a top-sized scale and runs slower kernels).
  const GpuStorage storage = GpuStorageOf(*this);
  const std::size_t element =
      storage == GpuStorage::kFloat32 ? sizeof(Dtype) : GpuStorageBytes(storage);
  const bool fp32 = storage == GpuStorage::kFloat32;
  const void* x =
      fp32 ? bottom[0]->data()->gpu_data(gpu) : input_reader_.Read(bottom[0]->data(), storage, gpu);
  const void* dy =
      fp32 ? top[0]->diff()->gpu_data(gpu) : diff_reader_.Read(top[0]->diff(), storage, gpu);
  void* output = gpu.Workspace(top[0]->count() * element);
  DOPPIO_CUDNN_CHECK(cudnnLRNCrossChannelForward(
      gpu.cudnn(), lrn_desc_, CUDNN_LRN_CROSS_CHANNEL_DIM1, CudnnScalar<Dtype>::one(), desc_.get(),
      x, CudnnScalar<Dtype>::zero(), desc_.get(), output));
  DOPPIO_CUDNN_CHECK(cudnnLRNCrossChannelBackward(
      gpu.cudnn(), lrn_desc_, CUDNN_LRN_CROSS_CHANNEL_DIM1, CudnnScalar<Dtype>::one(), desc_.get(),
      output, desc_.get(), dy, desc_.get(), x, CudnnScalar<Dtype>::zero(), desc_.get(),
      bottom[0]->diff()->mutable_raw_gpu_data(gpu, storage)));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(CudnnLRNLayer);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
