#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/lstm_unit_layer.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__device__ __forceinline__ Dtype DeviceSigmoid(Dtype x) {
  return Dtype(1) / (Dtype(1) + exp(-x));
}

// One thread per (item, cell): n = num * dim.
template <typename Dtype>
__global__ void LSTMUnitForward(long long n, int dim, const Dtype* c_prev, const Dtype* x,
                                const Dtype* cont, Dtype* c, Dtype* h) {
  DOPPIO_KERNEL_LOOP(k, n) {
    const long long item = k / dim;
    const int d = static_cast<int>(k % dim);
    const Dtype* gates = x + item * 4 * dim;
    const Dtype i = DeviceSigmoid(gates[d]);
    const Dtype f = cont[item] == Dtype(0) ? Dtype(0) : cont[item] * DeviceSigmoid(gates[dim + d]);
    const Dtype o = DeviceSigmoid(gates[2 * dim + d]);
    const Dtype g = tanh(gates[3 * dim + d]);
    const Dtype cell = f * c_prev[k] + i * g;
    c[k] = cell;
    h[k] = o * tanh(cell);
  }
}

template <typename Dtype>
__global__ void LSTMUnitBackward(long long n, int dim, const Dtype* c_prev, const Dtype* x,
                                 const Dtype* cont, const Dtype* c, const Dtype* dc,
                                 const Dtype* dh, Dtype* dc_prev, Dtype* dx) {
  DOPPIO_KERNEL_LOOP(k, n) {
    const long long item = k / dim;
    const int d = static_cast<int>(k % dim);
    const Dtype* gates = x + item * 4 * dim;
    Dtype* gates_diff = dx + item * 4 * dim;
    const Dtype i = DeviceSigmoid(gates[d]);
    const Dtype f = cont[item] == Dtype(0) ? Dtype(0) : cont[item] * DeviceSigmoid(gates[dim + d]);
    const Dtype o = DeviceSigmoid(gates[2 * dim + d]);
    const Dtype g = tanh(gates[3 * dim + d]);
    const Dtype tanh_c = tanh(c[k]);
    const Dtype dc_total = dc[k] + dh[k] * o * (Dtype(1) - tanh_c * tanh_c);
    dc_prev[k] = dc_total * f;
    gates_diff[d] = dc_total * g * i * (Dtype(1) - i);
    gates_diff[dim + d] = dc_total * c_prev[k] * f * (Dtype(1) - f);
    gates_diff[2 * dim + d] = dh[k] * tanh_c * o * (Dtype(1) - o);
    gates_diff[3 * dim + d] = dc_total * i * (Dtype(1) - g * g);
  }
}
}  // namespace

template <typename Dtype>
void LSTMUnitLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const long long n = top[0]->count();
  LaunchKernel("LSTMUnitForward", gpu, n, LSTMUnitForward<Dtype>, n, hidden_dim_,
               bottom[0]->gpu_data(gpu), bottom[1]->gpu_data(gpu), bottom[2]->gpu_data(gpu),
               top[0]->mutable_gpu_data(gpu), top[1]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void LSTMUnitLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                        const BlobVec& bottom) {
  CheckContNotPropagated(propagate_down);
  if (!propagate_down[0] && !propagate_down[1]) return;
  GpuContext& gpu = this->gpu();
  c_prev_diff_scratch_.ReshapeLike(*bottom[0]);
  gates_diff_scratch_.ReshapeLike(*bottom[1]);
  Dtype* dc_prev = propagate_down[0] ? bottom[0]->mutable_gpu_diff(gpu)
                                     : c_prev_diff_scratch_.mutable_gpu_diff(gpu);
  Dtype* dx = propagate_down[1] ? bottom[1]->mutable_gpu_diff(gpu)
                                : gates_diff_scratch_.mutable_gpu_diff(gpu);
  const long long n = top[0]->count();
  LaunchKernel("LSTMUnitBackward", gpu, n, LSTMUnitBackward<Dtype>, n, hidden_dim_,
               bottom[0]->gpu_data(gpu), bottom[1]->gpu_data(gpu), bottom[2]->gpu_data(gpu),
               top[0]->gpu_data(gpu), top[0]->gpu_diff(gpu), top[1]->gpu_diff(gpu), dc_prev, dx);
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(LSTMUnitLayer);

}  // namespace doppio
