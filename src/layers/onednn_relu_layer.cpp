#include "doppio/layers/onednn_relu_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include "doppio/core/layer_registry.hpp"

namespace doppio {

void OnednnReLULayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  ReLULayer<float>::Reshape(bottom, top);
  const int count = bottom[0]->count();
  const bool from_output = negative_slope_ >= 0 && bottom[0] == top[0];
  if (count == prepared_count_ && from_output == from_output_) return;
  from_output_ = from_output;
  UseOnednnThreads();
  OnednnCall(this->Describe(), "eltwise (relu)", [&] {
    const dnnl::memory::desc desc = OnednnPlainDesc({count});
    const auto algorithm = FromOutput() ? dnnl::algorithm::eltwise_relu_use_dst_for_bwd
                                        : dnnl::algorithm::eltwise_relu;
    const dnnl::eltwise_forward::primitive_desc forward_pd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, algorithm, desc,
                                    negative_slope_),
        engine_);
    forward_ = dnnl::eltwise_forward(forward_pd);
    backward_ = dnnl::eltwise_backward(dnnl::eltwise_backward::primitive_desc(
        dnnl::eltwise_backward::desc(algorithm, desc, desc, negative_slope_), engine_, forward_pd));
    for (dnnl::memory* memory : {&data_, &dst_, &diff_dst_, &diff_src_}) {
      *memory = dnnl::memory(desc, engine_, DNNL_MEMORY_NONE);
    }
  });
  prepared_count_ = count;
}

void OnednnReLULayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (fused()) {
    CheckHostRan(this->Describe());
    return;
  }
  if (!FromOutput()) KeepInputIfInPlace(*bottom[0], *top[0]);
  UseOnednnThreads();
  OnednnCall(this->Describe(), "eltwise (relu) forward", [&] {
    data_.set_data_handle(const_cast<float*>(bottom[0]->cpu_data()));
    dst_.set_data_handle(top[0]->mutable_cpu_data());
    forward_.execute(stream_, {{DNNL_ARG_SRC, data_}, {DNNL_ARG_DST, dst_}});
    stream_.wait();
  });
}

void OnednnReLULayer::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                   const BlobVec& bottom) {
  if (!propagate_down[0] || skip_backward_) return;
  UseOnednnThreads();
  OnednnCall(this->Describe(), "eltwise (relu) backward", [&] {
    const float* data = FromOutput() ? top[0]->cpu_data() : ForwardInput(*bottom[0]);
    data_.set_data_handle(const_cast<float*>(data));
    diff_dst_.set_data_handle(const_cast<float*>(top[0]->cpu_diff()));
    diff_src_.set_data_handle(bottom[0]->mutable_cpu_diff());
    backward_.execute(stream_, {{FromOutput() ? DNNL_ARG_DST : DNNL_ARG_SRC, data_},
                                {DNNL_ARG_DIFF_DST, diff_dst_},
                                {DNNL_ARG_DIFF_SRC, diff_src_}});
    stream_.wait();
  });
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(ReLU, ONEDNN, OnednnReLULayer, nullptr);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
