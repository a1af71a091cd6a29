#include "doppio/layers/onednn_inner_product_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include "doppio/core/layer_registry.hpp"

namespace doppio {

namespace {
using dnnl::memory;
using Args = std::unordered_map<int, memory>;

memory::desc AnyDesc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
}
}  // namespace

memory::desc OnednnInnerProductLayer::UserWeightsDesc() const {
  if (!transpose_) return OnednnPlainDesc({N_, K_});
  return memory::desc({N_, K_}, memory::data_type::f32, memory::dims{1, N_});
}

void OnednnInnerProductLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  InnerProductLayer<float>::Reshape(bottom, top);
  if (M_ == prepared_m_) return;
  UseOnednnThreads();
  OnednnPlaceInWorkspace(src_, dst_);
  OnednnCall(this->Describe(), "inner product forward", [&] { PrepareForward(); });
  prepared_m_ = M_;
  backward_prepared_ = false;
}

void OnednnInnerProductLayer::PrepareForward() {
  const auto desc = bias_term_ ? dnnl::inner_product_forward::desc(
                                     dnnl::prop_kind::forward_training, OnednnPlainDesc({M_, K_}),
                                     UserWeightsDesc(), AnyDesc({N_}), OnednnPlainDesc({M_, N_}))
                               : dnnl::inner_product_forward::desc(
                                     dnnl::prop_kind::forward_training, OnednnPlainDesc({M_, K_}),
                                     UserWeightsDesc(), OnednnPlainDesc({M_, N_}));
  forward_pd_ = dnnl::inner_product_forward::primitive_desc(desc, PostOps(), engine_);
  forward_ = dnnl::inner_product_forward(forward_pd_);
  src_.Init(engine_, OnednnPlainDesc({M_, K_}), forward_pd_.src_desc());
  dst_.Init(engine_, OnednnPlainDesc({M_, N_}), forward_pd_.dst_desc());
  weights_.Init(engine_, UserWeightsDesc(), forward_pd_.weights_desc());
  if (bias_term_) bias_.Init(engine_, OnednnPlainDesc({N_}), forward_pd_.bias_desc());
}

void OnednnInnerProductLayer::PrepareBackward() {
  const dnnl::inner_product_backward_data::primitive_desc data_pd(
      dnnl::inner_product_backward_data::desc(OnednnPlainDesc({M_, K_}), UserWeightsDesc(),
                                              OnednnPlainDesc({M_, N_})),
      engine_, forward_pd_);
  backward_data_ = dnnl::inner_product_backward_data(data_pd);
  data_diff_dst_.Init(engine_, OnednnPlainDesc({M_, N_}), data_pd.diff_dst_desc());
  diff_src_.Init(engine_, OnednnPlainDesc({M_, K_}), data_pd.diff_src_desc());
  data_weights_.Init(engine_, UserWeightsDesc(), data_pd.weights_desc());

  const auto weights_desc =
      bias_term_
          ? dnnl::inner_product_backward_weights::desc(OnednnPlainDesc({M_, K_}), UserWeightsDesc(),
                                                       AnyDesc({N_}), OnednnPlainDesc({M_, N_}))
          : dnnl::inner_product_backward_weights::desc(OnednnPlainDesc({M_, K_}), UserWeightsDesc(),
                                                       OnednnPlainDesc({M_, N_}));
  const dnnl::inner_product_backward_weights::primitive_desc weights_pd(weights_desc, engine_,
                                                                        forward_pd_);
  backward_weights_ = dnnl::inner_product_backward_weights(weights_pd);
  weights_src_.Init(engine_, OnednnPlainDesc({M_, K_}), weights_pd.src_desc());
  weights_diff_dst_.Init(engine_, OnednnPlainDesc({M_, N_}), weights_pd.diff_dst_desc());
  diff_weights_.Init(engine_, weights_pd.diff_weights_desc(), UserWeightsDesc());
  if (bias_term_) diff_bias_.Init(engine_, weights_pd.diff_bias_desc(), OnednnPlainDesc({N_}));
}

void OnednnInnerProductLayer::RecreateForward() {
  if (prepared_m_ < 0) return;
  UseOnednnThreads();
  OnednnCall(this->Describe(), "inner product forward with relu", [&] { PrepareForward(); });
  backward_prepared_ = false;
}

void OnednnInnerProductLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  CountForward();
  UseOnednnThreads();
  OnednnPlaceInWorkspace(src_, dst_);
  OnednnCall(this->Describe(), "inner product forward", [&] {
    Args args{{DNNL_ARG_WEIGHTS, weights_.Get(stream_, *this->blobs_[0])},
              {DNNL_ARG_SRC, src_.Read(stream_, bottom[0]->cpu_data())},
              {DNNL_ARG_DST, dst_.Write(top[0]->mutable_cpu_data())}};
    if (bias_term_) args[DNNL_ARG_BIAS] = bias_.Get(stream_, *this->blobs_[1]);
    forward_.execute(stream_, args);
    dst_.Publish(stream_);
    stream_.wait();
  });
}

void OnednnInnerProductLayer::Backward_cpu(const BlobVec& top,
                                           const std::vector<bool>& propagate_down,
                                           const BlobVec& bottom) {
  UseOnednnThreads();
  if (!backward_prepared_) {
    OnednnCall(this->Describe(), "inner product backward", [&] { PrepareBackward(); });
    backward_prepared_ = true;
  }
  OnednnPlaceInWorkspace(weights_src_, weights_diff_dst_, diff_weights_, diff_bias_, data_diff_dst_,
                         diff_src_);
  const bool weight_diff = this->param_propagate_down(0);
  const bool bias_diff = bias_term_ && this->param_propagate_down(1);
  OnednnCall(this->Describe(), "inner product backward", [&] {
    const float* top_diff = top[0]->cpu_diff();
    if (weight_diff || bias_diff) {
      Args args{{DNNL_ARG_SRC, weights_src_.Read(stream_, bottom[0]->cpu_data())},
                {DNNL_ARG_DIFF_DST, weights_diff_dst_.Read(stream_, top_diff)},
                {DNNL_ARG_DIFF_WEIGHTS, diff_weights_.scratch()}};
      if (bias_term_) args[DNNL_ARG_DIFF_BIAS] = diff_bias_.scratch();
      backward_weights_.execute(stream_, args);
      if (weight_diff) diff_weights_.AddTo(stream_, this->blobs_[0]->mutable_cpu_diff());
      if (bias_diff) diff_bias_.AddTo(stream_, this->blobs_[1]->mutable_cpu_diff());
    }
    if (propagate_down[0]) {
      backward_data_.execute(stream_,
                             {{DNNL_ARG_DIFF_DST, data_diff_dst_.Read(stream_, top_diff)},
                              {DNNL_ARG_WEIGHTS, data_weights_.Get(stream_, *this->blobs_[0])},
                              {DNNL_ARG_DIFF_SRC, diff_src_.Write(bottom[0]->mutable_cpu_diff())}});
      diff_src_.Publish(stream_);
    }
    stream_.wait();
  });
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(InnerProduct, ONEDNN, OnednnInnerProductLayer, nullptr);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
