#include "doppio/layers/onednn_eltwise_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include "doppio/core/layer_registry.hpp"

namespace doppio {

std::string OnednnEltwiseLayer::Unsupported(const LayerParameter& param) {
  if (param.eltwise_param().operation() != EltwiseParameter::SUM) {
    return "oneDNN's engine here runs operation SUM only (PROD and MAX run on engine CAFFE)";
  }
  return "";
}

void OnednnEltwiseLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  EltwiseLayer<float>::Reshape(bottom, top);
  const int count = bottom[0]->count();
  if (count == prepared_count_ || count == 0) return;
  UseOnednnThreads();
  OnednnCall(this->Describe(), "sum", [&] {
    const auto desc = OnednnPlainDesc({count});
    const std::vector<dnnl::memory::desc> descs(bottom.size(), desc);
    forward_ = dnnl::sum(dnnl::sum::primitive_desc(desc, coeffs_, descs, engine_));
    srcs_.assign(bottom.size(), dnnl::memory());
    for (auto& src : srcs_) src = dnnl::memory(desc, engine_, DNNL_MEMORY_NONE);
    for (dnnl::memory* memory : {&dst_, &diff_dst_, &diff_src_}) {
      *memory = dnnl::memory(desc, engine_, DNNL_MEMORY_NONE);
    }
    scales_.clear();
    for (const float coeff : coeffs_) {
      scales_.emplace_back(dnnl::eltwise_forward::primitive_desc(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::eltwise_linear, desc, coeff, 0.f),
          engine_));
    }
  });
  prepared_count_ = count;
}

void OnednnEltwiseLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (bottom[0]->count() == 0) return;
  UseOnednnThreads();
  OnednnCall(this->Describe(), "sum forward", [&] {
    std::unordered_map<int, dnnl::memory> args;
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      srcs_[i].set_data_handle(const_cast<float*>(bottom[i]->cpu_data()));
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = srcs_[i];
    }
    dst_.set_data_handle(top[0]->mutable_cpu_data());
    args[DNNL_ARG_DST] = dst_;
    forward_.execute(stream_, args);
    stream_.wait();
  });
}

void OnednnEltwiseLayer::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  if (bottom[0]->count() == 0) return;
  UseOnednnThreads();
  OnednnCall(this->Describe(), "sum backward (eltwise linear)", [&] {
    diff_dst_.set_data_handle(const_cast<float*>(top[0]->cpu_diff()));
    // Last to first: an in-place bottom[0] shares the top diff, which the others read.
    for (int i = static_cast<int>(bottom.size()) - 1; i >= 0; --i) {
      if (!propagate_down[i]) continue;
      diff_src_.set_data_handle(bottom[i]->mutable_cpu_diff());
      scales_[i].execute(stream_, {{DNNL_ARG_SRC, diff_dst_}, {DNNL_ARG_DST, diff_src_}});
    }
    stream_.wait();
  });
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(Eltwise, ONEDNN, OnednnEltwiseLayer,
                                      OnednnEltwiseLayer::Unsupported);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
