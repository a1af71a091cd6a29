#include "doppio/layers/onednn_pooling_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include <glog/logging.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/thread_pool.hpp"

namespace doppio {

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
  caffe_shape_ = false;
  if (method_ == PoolingParameter::AVE && Overhangs() && (pad_h_ > 0 || pad_w_ > 0)) {
    caffe_shape_ = true;
    LOG(INFO) << this->Describe() << ": average pooling of " << height_ << "x" << width_
              << " with pad " << pad_h_ << "x" << pad_w_
              << " has windows that overhang the padding, whose divisor oneDNN cannot "
                 "give; this shape runs the CAFFE kernels";
  }
  prepared_shape_ = bottom[0]->shape();
  prepared_src_ = dnnl::memory::desc();
}

dnnl::memory::dims OnednnPoolingLayer::RightPadding() const {
  // The right padding that ends the last window where Caffe's does: more than the left one
  // when ceil mode adds a partial window, never less (floor mode leaves the rest unread).
  return {std::max(pad_h_, (pooled_height_ - 1) * stride_h_ + kernel_h_ - height_ - pad_h_),
          std::max(pad_w_, (pooled_width_ - 1) * stride_w_ + kernel_w_ - width_ - pad_w_)};
}

bool OnednnPoolingLayer::Overhangs() const {
  const dnnl::memory::dims pad_r = RightPadding();
  return pad_r[0] > pad_h_ || pad_r[1] > pad_w_;
}

void OnednnPoolingLayer::Prepare(const dnnl::memory::desc& src) {
  dnnl::algorithm algorithm = dnnl::algorithm::pooling_max;
  if (method_ == PoolingParameter::AVE) {
    // Caffe divides by the window clipped to the padded input: the whole window where none
    // overhangs the padding, the part inside the image where there is no padding.
    algorithm = Overhangs() ? dnnl::algorithm::pooling_avg_exclude_padding
                            : dnnl::algorithm::pooling_avg_include_padding;
  }
  const dnnl::memory::dims src_dims = {num_, channels_, height_, width_};
  const dnnl::memory::dims dst_dims = {num_, channels_, pooled_height_, pooled_width_};
  // The output in the input's layout: oneDNN picks it for `any`.
  const dnnl::memory::desc dst(dst_dims, src.data_type(), dnnl::memory::format_tag::any);
  const dnnl::memory::dims strides = {stride_h_, stride_w_};
  const dnnl::memory::dims kernel = {kernel_h_, kernel_w_};
  const dnnl::memory::dims pad_l = {pad_h_, pad_w_};
  const dnnl::memory::dims pad_r = RightPadding();
  const dnnl::pooling_forward::primitive_desc forward_pd(
      dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, algorithm, src, dst, strides,
                                  kernel, pad_l, pad_r),
      engine());
  forward_ = dnnl::pooling_forward(forward_pd);
  const dnnl::pooling_backward::primitive_desc backward_pd(
      dnnl::pooling_backward::desc(algorithm, src, forward_pd.dst_desc(), strides, kernel, pad_l,
                                   pad_r),
      engine(), forward_pd);
  backward_ = dnnl::pooling_backward(backward_pd);
  src_.Init(engine(), OnednnPlainDesc(src_dims), src);
  dst_.Init(engine(), OnednnPlainDesc(dst_dims), forward_pd.dst_desc());
  diff_dst_.Init(engine(), OnednnPlainDesc(dst_dims), backward_pd.diff_dst_desc());
  diff_src_.Init(engine(), OnednnPlainDesc(src_dims), backward_pd.diff_src_desc());
  workspace_ = dnnl::memory(forward_pd.workspace_desc(), engine());
  prepared_src_ = src;
}

void OnednnPoolingLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  SyncedMemory& in = *bottom[0]->data();
  // A NaN is one in any layout; a oneDNN layout held in the blob has no padding.
  caffe_pass_ = caffe_shape_ ||
                (method_ == PoolingParameter::MAX && OnednnHeldHasNaN(in, bottom[0]->count()));
  if (caffe_pass_) {
    PoolingLayer<float>::Forward_cpu(bottom, top);
    return;
  }
  const auto src = OnednnArrivingDesc(in, {num_, channels_, height_, width_}, data_type());
  if (src != prepared_src_) {
    Build(method_ == PoolingParameter::MAX ? "pooling (max)" : "pooling (avg)",
          [&] { Prepare(src); });
  }
  OnednnPlaceInWorkspace(src_.ForRead(in), dst_.ForWrite(*top[0]->data()));
  Run("pooling forward", [&] {
    OnednnArgs args{{DNNL_ARG_SRC, src_.Read(stream(), in)},
                    {DNNL_ARG_DST, dst_.Write(*top[0]->data())}};
    if (method_ == PoolingParameter::MAX) args[DNNL_ARG_WORKSPACE] = workspace_;
    forward_.execute(stream(), args);
    dst_.Publish(stream());
  });
}

void OnednnPoolingLayer::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  if (caffe_pass_) {
    PoolingLayer<float>::Backward_cpu(top, propagate_down, bottom);
    return;
  }
  OnednnPlaceInWorkspace(diff_dst_.ForRead(*top[0]->diff()),
                         diff_src_.ForWrite(*bottom[0]->diff()));
  Run("pooling backward", [&] {
    OnednnArgs args{{DNNL_ARG_DIFF_DST, diff_dst_.Read(stream(), *top[0]->diff())},
                    {DNNL_ARG_DIFF_SRC, diff_src_.Write(*bottom[0]->diff())}};
    if (method_ == PoolingParameter::MAX) args[DNNL_ARG_WORKSPACE] = workspace_;
    backward_.execute(stream(), args);
    diff_src_.Publish(stream());
  });
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(Pooling, ONEDNN, OnednnPoolingLayer,
                                      OnednnPoolingLayer::Unsupported);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
