#include "doppio/layers/onednn_softmax_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include "doppio/core/layer_registry.hpp"
#include "doppio/layers/onednn_tensor.hpp"

namespace doppio {

void OnednnSoftmaxLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  SoftmaxLayer<float>::Reshape(bottom, top);
  const std::vector<int> dims = {outer_num_, channels_, inner_num_};
  if (dims == prepared_dims_ || bottom[0]->count() == 0) return;
  Build("softmax", [&] {
    const auto desc = OnednnPlainDesc({outer_num_, channels_, inner_num_});
    const dnnl::softmax_forward::primitive_desc forward_pd(
        dnnl::softmax_forward::desc(dnnl::prop_kind::forward_training, desc, 1), engine());
    forward_ = dnnl::softmax_forward(forward_pd);
    backward_ = dnnl::softmax_backward(dnnl::softmax_backward::primitive_desc(
        dnnl::softmax_backward::desc(desc, desc, 1), engine(), forward_pd));
    for (dnnl::memory* memory : {&src_, &dst_, &diff_dst_, &diff_src_}) {
      *memory = dnnl::memory(desc, engine(), DNNL_MEMORY_NONE);
    }
  });
  prepared_dims_ = dims;
}

void OnednnSoftmaxLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (bottom[0]->count() == 0) return;
  // oneDNN's softmax drops a NaN from its row's maximum and can give finite probabilities;
  // Caffe's kernel makes the row NaN, the rule of every engine. Backward, from the output,
  // passes the NaN on either way.
  if (OnednnHasNaN(bottom[0]->cpu_data(), bottom[0]->count())) {
    SoftmaxLayer<float>::Forward_cpu(bottom, top);
    return;
  }
  Run("softmax forward", [&] {
    src_.set_data_handle(const_cast<float*>(bottom[0]->cpu_data()));
    dst_.set_data_handle(top[0]->mutable_cpu_data());
    forward_.execute(stream(), {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}});
  });
}

void OnednnSoftmaxLayer::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  if (!propagate_down[0] || bottom[0]->count() == 0) return;
  Run("softmax backward", [&] {
    dst_.set_data_handle(const_cast<float*>(top[0]->cpu_data()));
    diff_dst_.set_data_handle(const_cast<float*>(top[0]->cpu_diff()));
    diff_src_.set_data_handle(bottom[0]->mutable_cpu_diff());
    backward_.execute(
        stream(),
        {{DNNL_ARG_DST, dst_}, {DNNL_ARG_DIFF_DST, diff_dst_}, {DNNL_ARG_DIFF_SRC, diff_src_}});
  });
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(Softmax, ONEDNN, OnednnSoftmaxLayer, nullptr);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
