#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/scale_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void ScaleForward(long long n, int scale_dim, int inner, const Dtype* x,
                             const Dtype* scale, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = x[i] * scale[(i / inner) % scale_dim]; }
}
}  // namespace

template <typename Dtype>
void ScaleLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  const Dtype* scale = (bottom.size() > 1 ? bottom[1] : this->blobs_[0].get())->gpu_data(gpu);
  if (in_place_ && !kept_input_) {
    gpu_copy(gpu, bottom[0]->count(), bottom[0]->gpu_data(gpu), saved_input_.mutable_gpu_data(gpu));
  }
  LaunchKernel("ScaleForward", gpu, count, ScaleForward<Dtype>, count, scale_dim_, inner_dim_,
               bottom[0]->gpu_data(gpu), scale, top[0]->mutable_gpu_data(gpu));
  if (bias_layer_) {
    this->ShareDevice(*bias_layer_);
    bias_layer_->Forward(bias_bottom_, top);
  }
}

template <typename Dtype>
void ScaleLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  GpuContext& gpu = this->gpu();
  if (bias_layer_ && this->param_propagate_down(bias_param_id_)) {
    this->ShareDevice(*bias_layer_);
    bias_layer_->Backward(top, std::vector<bool>{false}, bias_bottom_);
  }
  const Dtype* dy = top[0]->gpu_diff(gpu);
  const bool learned = bottom.size() == 1;
  if (learned ? this->param_propagate_down(0) : propagate_down[1]) {
    const Dtype* x = !in_place_    ? bottom[0]->gpu_data(gpu)
                     : kept_input_ ? kept_input_->gpu_data(gpu)
                                   : saved_input_.gpu_data(gpu);
    Blob<Dtype>* scale = learned ? this->blobs_[0].get() : bottom[1];
    // A learned scale accumulates its gradient; a scale bottom has its diff overwritten.
    ChannelSum(gpu, outer_dim_, scale_dim_, inner_dim_, ProductTerm<Dtype>{dy, x},
               learned ? Dtype(1) : Dtype(0), scale->mutable_gpu_diff(gpu));
  }
  if (propagate_down[0]) {
    // After the scale gradient, which still reads dy: dx may alias dy (in place).
    const long long count = bottom[0]->count();
    const Dtype* scale = (bottom.size() > 1 ? bottom[1] : this->blobs_[0].get())->gpu_data(gpu);
    LaunchKernel("ScaleForward", gpu, count, ScaleForward<Dtype>, count, scale_dim_, inner_dim_, dy,
                 scale, bottom[0]->mutable_gpu_diff(gpu));
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(ScaleLayer);

}  // namespace doppio
