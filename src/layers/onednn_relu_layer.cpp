#include "doppio/layers/onednn_relu_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include "doppio/core/layer_registry.hpp"

namespace doppio {

void OnednnReLULayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  ReLULayer<float>::Reshape(bottom, top);
  const bool from_output = negative_slope_ >= 0 && bottom[0] == top[0];
  if (bottom[0]->count() == prepared_count_ && from_output == from_output_) return;
  from_output_ = from_output;
  prepared_count_ = bottom[0]->count();
  prepared_desc_ = dnnl::memory::desc();
}

void OnednnReLULayer::Prepare(const dnnl::memory::desc& desc) {
  const auto algorithm =
      FromOutput() ? dnnl::algorithm::eltwise_relu_use_dst_for_bwd : dnnl::algorithm::eltwise_relu;
  const dnnl::eltwise_forward::primitive_desc forward_pd(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, algorithm, desc,
                                  negative_slope_),
      engine());
  forward_ = dnnl::eltwise_forward(forward_pd);
  backward_ = dnnl::eltwise_backward(dnnl::eltwise_backward::primitive_desc(
      dnnl::eltwise_backward::desc(algorithm, desc, desc, negative_slope_), engine(), forward_pd));
  const auto plain = OnednnPlainDesc(desc.dims());
  for (OnednnTensor* tensor : {&data_, &dst_, &diff_dst_, &diff_src_}) {
    tensor->Init(engine(), plain, desc);
  }
  prepared_desc_ = desc;
}

void OnednnReLULayer::PrepareFor(const SyncedMemory& data) {
  const auto desc = OnednnElementwiseDesc(data, prepared_count_, data_type());
  if (desc == prepared_desc_) return;
  Build("eltwise (relu)", [&] { Prepare(desc); });
}

void OnednnReLULayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (fused()) {
    CheckHostRan(this->Describe());
    caffe_pass_ = HostRanCaffeReLU();
    return;
  }
  // oneDNN's ReLU makes a NaN 0 (and its backward takes a NaN for positive); Caffe's kernel
  // passes it on, the rule of every engine (relu_layer.hpp).
  caffe_pass_ = OnednnHeldHasNaN(*bottom[0]->data(), bottom[0]->count());
  if (caffe_pass_) {
    ReLULayer<float>::Forward_cpu(bottom, top);
    return;
  }
  UseOnednnThreads();
  // Kept in Caffe's layout: Backward reorders it to the layout it then runs in.
  if (!FromOutput()) KeepInputIfInPlace(*bottom[0], *top[0]);
  PrepareFor(*bottom[0]->data());
  OnednnPlaceInWorkspace(data_.ForRead(*bottom[0]->data()), dst_.ForWrite(*top[0]->data()));
  Run("eltwise (relu) forward", [&] {
    const dnnl::memory& src = data_.Read(stream(), *bottom[0]->data());
    forward_.execute(stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst_.Write(*top[0]->data())}});
    dst_.Publish(stream());
  });
}

void OnednnReLULayer::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                   const BlobVec& bottom) {
  if (!propagate_down[0] || skip_backward_) return;
  if (caffe_pass_) {
    ReLULayer<float>::Backward_cpu(top, propagate_down, bottom);
    return;
  }
  // In the layout Forward ran in (a reader that turned the data to Caffe's since costs a
  // reorder, not new primitives); a fused ReLU, whose Forward does nothing, in the one the
  // data arrives in.
  if (prepared_desc_.data.ndims == 0) PrepareFor(*bottom[0]->data());
  // The kept input of an in-place ReLU is in Caffe's layout (a pointer): always the copy.
  const bool kept_input = !FromOutput() && bottom[0] == top[0];
  OnednnPlaceInWorkspace(kept_input ? &data_ : data_.ForRead(*bottom[0]->data()),
                         diff_dst_.ForRead(*top[0]->diff()),
                         diff_src_.ForWrite(*bottom[0]->diff()));
  Run("eltwise (relu) backward", [&] {
    const dnnl::memory& data = FromOutput() || bottom[0] != top[0]
                                   ? data_.Read(stream(), *bottom[0]->data())
                                   : data_.Read(stream(), ForwardInput(*bottom[0]));
    const dnnl::memory& diff_dst = diff_dst_.Read(stream(), *top[0]->diff());
    backward_.execute(stream(), {{FromOutput() ? DNNL_ARG_DST : DNNL_ARG_SRC, data},
                                 {DNNL_ARG_DIFF_DST, diff_dst},
                                 {DNNL_ARG_DIFF_SRC, diff_src_.Write(*bottom[0]->diff())}});
    diff_src_.Publish(stream());
  });
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(ReLU, ONEDNN, OnednnReLULayer, nullptr);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
