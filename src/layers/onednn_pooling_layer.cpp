#include "doppio/layers/onednn_pooling_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include <glog/logging.h>

#include <algorithm>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

namespace {
bool HasNaN(const float* data, int count) {
  bool nan = false;
  for (int i = 0; i < count; ++i) nan |= data[i] != data[i];
  return nan;
}
}  // namespace

std::string OnednnPoolingLayer::Unsupported(const LayerParameter& param) {
  if (param.pooling_param().pool() == PoolingParameter::STOCHASTIC) {
    return "oneDNN has no stochastic pooling";
  }
  if (param.top_size() > 1) return "oneDNN gives no argmax mask top";
  return "";
}

void OnednnPoolingLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  PoolingLayer<float>::Reshape(bottom, top);
  if (bottom[0]->shape() == prepared_shape_) return;
  UseOnednnThreads();
  OnednnCall(this->Describe(), method_ == PoolingParameter::MAX ? "pooling (max)" : "pooling (avg)",
             [&] { Prepare(); });
  prepared_shape_ = bottom[0]->shape();
}

void OnednnPoolingLayer::Prepare() {
  // The right padding that ends the last window where Caffe's does: more than the left one
  // when ceil mode adds a partial window, never less (floor mode leaves the rest unread).
  const dnnl::memory::dims pad_l = {pad_h_, pad_w_};
  const dnnl::memory::dims pad_r = {
      std::max(pad_h_, (pooled_height_ - 1) * stride_h_ + kernel_h_ - height_ - pad_h_),
      std::max(pad_w_, (pooled_width_ - 1) * stride_w_ + kernel_w_ - width_ - pad_w_)};
  const bool overhang = pad_r[0] > pad_h_ || pad_r[1] > pad_w_;
  caffe_shape_ = false;
  const bool padded = pad_h_ > 0 || pad_w_ > 0;
  dnnl::algorithm algorithm = dnnl::algorithm::pooling_max;
  if (method_ == PoolingParameter::AVE) {
    // Caffe divides by the window clipped to the padded input: the whole window where none
    // overhangs the padding, the part inside the image where there is no padding.
    algorithm = overhang ? dnnl::algorithm::pooling_avg_exclude_padding
                         : dnnl::algorithm::pooling_avg_include_padding;
    caffe_shape_ = overhang && padded;
    if (caffe_shape_) {
      LOG(INFO) << this->Describe() << ": average pooling of " << height_ << "x" << width_
                << " with pad " << pad_h_ << "x" << pad_w_
                << " has windows that overhang the padding, whose divisor oneDNN cannot "
                   "give; this shape runs the CAFFE kernels";
      return;
    }
  }
  const auto src = OnednnPlainDesc({num_, channels_, height_, width_});
  const auto dst = OnednnPlainDesc({num_, channels_, pooled_height_, pooled_width_});
  const dnnl::memory::dims strides = {stride_h_, stride_w_};
  const dnnl::memory::dims kernel = {kernel_h_, kernel_w_};
  const dnnl::pooling_forward::primitive_desc forward_pd(
      dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, algorithm, src, dst, strides,
                                  kernel, pad_l, pad_r),
      engine_);
  forward_ = dnnl::pooling_forward(forward_pd);
  backward_ = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(
      dnnl::pooling_backward::desc(algorithm, src, dst, strides, kernel, pad_l, pad_r), engine_,
      forward_pd));
  src_ = dnnl::memory(src, engine_, DNNL_MEMORY_NONE);
  diff_src_ = dnnl::memory(src, engine_, DNNL_MEMORY_NONE);
  dst_ = dnnl::memory(dst, engine_, DNNL_MEMORY_NONE);
  diff_dst_ = dnnl::memory(dst, engine_, DNNL_MEMORY_NONE);
  workspace_ = dnnl::memory(forward_pd.workspace_desc(), engine_);
}

void OnednnPoolingLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const float* in = bottom[0]->cpu_data();
  caffe_pass_ =
      caffe_shape_ || (method_ == PoolingParameter::MAX && HasNaN(in, bottom[0]->count()));
  if (caffe_pass_) {
    PoolingLayer<float>::Forward_cpu(bottom, top);
    return;
  }
  UseOnednnThreads();
  OnednnCall(this->Describe(), "pooling forward", [&] {
    src_.set_data_handle(const_cast<float*>(in));
    dst_.set_data_handle(top[0]->mutable_cpu_data());
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}};
    if (method_ == PoolingParameter::MAX) args[DNNL_ARG_WORKSPACE] = workspace_;
    forward_.execute(stream_, args);
    stream_.wait();
  });
}

void OnednnPoolingLayer::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  if (caffe_pass_) {
    PoolingLayer<float>::Backward_cpu(top, propagate_down, bottom);
    return;
  }
  UseOnednnThreads();
  OnednnCall(this->Describe(), "pooling backward", [&] {
    diff_dst_.set_data_handle(const_cast<float*>(top[0]->cpu_diff()));
    diff_src_.set_data_handle(bottom[0]->mutable_cpu_diff());
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DIFF_DST, diff_dst_},
                                               {DNNL_ARG_DIFF_SRC, diff_src_}};
    if (method_ == PoolingParameter::MAX) args[DNNL_ARG_WORKSPACE] = workspace_;
    backward_.execute(stream_, args);
    stream_.wait();
  });
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(Pooling, ONEDNN, OnednnPoolingLayer,
                                      OnednnPoolingLayer::Unsupported);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
