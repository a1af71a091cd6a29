#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/argmax_layer.hpp"

namespace doppio {

namespace {
// One thread per item picks its top_k (value, index) pairs in the CPU code's order: larger
// value first, and for equal values the larger index first (std::greater on pairs).
template <typename Dtype>
__global__ void ArgMaxForward(long long num, int dim, int stride, int top_k, bool has_axis,
                              bool out_max_val, const Dtype* bottom, Dtype* top) {
  DOPPIO_KERNEL_LOOP(i, num) {
    const long long outer = i / stride;
    const long long inner = i % stride;
    const Dtype* values = bottom + outer * dim * stride + inner;
    bool have_previous = false;
    Dtype previous_value = 0;
    int previous_index = 0;
    for (int k = 0; k < top_k; ++k) {
      int best = -1;
      Dtype best_value = 0;
      for (int j = 0; j < dim; ++j) {
        const Dtype v = values[static_cast<long long>(j) * stride];
        // Only pairs ranked after the previous pick.
        if (have_previous && !(v < previous_value || (v == previous_value && j < previous_index))) {
          continue;
        }
        if (best < 0 || v > best_value || (v == best_value && j > best)) {
          best = j;
          best_value = v;
        }
      }
      have_previous = true;
      previous_value = best_value;
      previous_index = best;
      if (has_axis) {
        top[(outer * top_k + k) * stride + inner] =
            out_max_val ? best_value : static_cast<Dtype>(best);
      } else if (out_max_val) {
        top[2 * i * top_k + k] = static_cast<Dtype>(best);
        top[2 * i * top_k + top_k + k] = best_value;
      } else {
        top[i * top_k + k] = static_cast<Dtype>(best);
      }
    }
  }
}
}  // namespace

template <typename Dtype>
void ArgMaxLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  const int dim = has_axis_ ? bottom[0]->shape(axis_) : bottom[0]->count(1);
  const int stride = has_axis_ ? bottom[0]->count(axis_ + 1) : 1;
  if (dim == 0 || bottom[0]->count() == 0) return;
  GpuContext& gpu = this->gpu();
  const long long num = bottom[0]->count() / dim;
  LaunchKernel("ArgMaxForward", gpu, num, ArgMaxForward<Dtype>, num, dim, stride, top_k_, has_axis_,
               out_max_val_, bottom[0]->gpu_data(gpu), top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void ArgMaxLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  // No gradient: the same check as on the CPU.
  this->Backward_cpu(top, propagate_down, bottom);
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(ArgMaxLayer);

}  // namespace doppio
