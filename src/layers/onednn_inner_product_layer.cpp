#include "doppio/layers/onednn_inner_product_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include "doppio/core/layer_registry.hpp"

namespace doppio {

namespace {
using dnnl::memory;

// dnnl::sgemm returns its status; as a dnnl::error it reaches OnednnCall's message.
void Sgemm(char transa, char transb, memory::dim m, memory::dim n, memory::dim k, const float* a,
           memory::dim lda, const float* b, memory::dim ldb, float* c, memory::dim ldc) {
  const dnnl::status status =
      dnnl::sgemm(transa, transb, m, n, k, 1.f, a, lda, b, ldb, 1.f, c, ldc);
  if (status != dnnl::status::success) {
    throw dnnl::error(static_cast<dnnl_status_t>(status), "sgemm (parameter gradient)");
  }
}
}  // namespace

memory::desc OnednnInnerProductLayer::UserWeightsDesc(memory::data_type type) const {
  if (!transpose_) return OnednnPlainDesc({N_, K_}, type);
  return memory::desc({N_, K_}, type, memory::dims{1, N_});
}

void OnednnInnerProductLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  InnerProductLayer<float>::Reshape(bottom, top);
  if (M_ == prepared_m_) return;
  Build("inner product forward", [&] { PrepareForward(); });
  prepared_m_ = M_;
  backward_prepared_ = false;
}

void OnednnInnerProductLayer::PrepareForward() {
  const memory::data_type type = data_type();
  const memory::desc src = OnednnPlainDesc({M_, K_}, type);
  const auto desc =
      bias_term_
          ? dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training, src,
                                              UserWeightsDesc(type), OnednnAnyDesc({N_}),
                                              OnednnPlainDesc({M_, N_}))
          : dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training, src,
                                              UserWeightsDesc(type), OnednnPlainDesc({M_, N_}));
  forward_pd_ = dnnl::inner_product_forward::primitive_desc(desc, engine());
  forward_ = dnnl::inner_product_forward(forward_pd_);
  src_.Init(engine(), OnednnPlainDesc({M_, K_}), forward_pd_.src_desc());
  dst_.Init(engine(), OnednnPlainDesc({M_, N_}), forward_pd_.dst_desc());
  const bool kept = this->phase_ == TEST;
  weights_.Init(engine(), UserWeightsDesc(), forward_pd_.weights_desc(), kept);
  if (bias_term_) bias_.Init(engine(), OnednnPlainDesc({N_}), forward_pd_.bias_desc(), kept);
}

void OnednnInnerProductLayer::PrepareBackward() {
  const dnnl::inner_product_backward_data::primitive_desc data_pd(
      dnnl::inner_product_backward_data::desc(OnednnPlainDesc({M_, K_}),
                                              UserWeightsDesc(data_type()),
                                              OnednnPlainDesc({M_, N_}, data_type())),
      engine(), forward_pd_);
  backward_data_ = dnnl::inner_product_backward_data(data_pd);
  data_diff_dst_.Init(engine(), OnednnPlainDesc({M_, N_}), data_pd.diff_dst_desc());
  diff_src_.Init(engine(), OnednnPlainDesc({M_, K_}), data_pd.diff_src_desc());
  data_weights_.Init(engine(), UserWeightsDesc(), data_pd.weights_desc(), false);
}

// The parameter gradients are GEMMs that add into the blobs' diffs in Caffe's layout (beta 1),
// on oneDNN's GEMM (its OpenMP threads), the one its inner product primitives run on. The
// backward-weights primitive wrote a scratch copy that a reorder then added into the diff: at batch
// 8 that reorder took longer than the product (AlexNet's fc6, 2 threads: 10.3 against 7.7 ms), as
// it reads and writes every weight once more.
void OnednnInnerProductLayer::AddWeightGradient(const float* bottom, const float* top_diff) {
  float* weight_diff = this->blobs_[0]->mutable_cpu_diff();
  if (transpose_) {
    // dW (K x N) += bottom^T (K x M) * top_diff (M x N)
    Sgemm('T', 'N', K_, N_, M_, bottom, K_, top_diff, N_, weight_diff, N_);
  } else {
    // dW (N x K) += top_diff^T (N x M) * bottom (M x K)
    Sgemm('T', 'N', N_, K_, M_, top_diff, N_, bottom, K_, weight_diff, K_);
  }
}

void OnednnInnerProductLayer::AddBiasGradient(const float* top_diff) {
  // d bias (1 x N) += ones^T (1 x M) * top_diff (M x N)
  Sgemm('N', 'N', 1, N_, M_, this->bias_multiplier_.cpu_data(), M_, top_diff, N_,
        this->blobs_[1]->mutable_cpu_diff(), N_);
}

void OnednnInnerProductLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  CountForward();
  OnednnPlaceInWorkspace(&src_, &dst_, &weights_, &bias_);
  Run("inner product forward", [&] {
    OnednnArgs args{{DNNL_ARG_WEIGHTS, weights_.Get(stream(), *this->blobs_[0])},
                    {DNNL_ARG_SRC, src_.Read(stream(), bottom[0]->cpu_data())},
                    {DNNL_ARG_DST, dst_.Write(top[0]->mutable_cpu_data())}};
    if (bias_term_) args[DNNL_ARG_BIAS] = bias_.Get(stream(), *this->blobs_[1]);
    forward_.execute(stream(), args);
    if (fuses_relu()) {
      stream().wait();
      OnednnReLUInPlace(dst_.primitive(), relu_slope());
    }
    dst_.Publish(stream());
  });
  SetRanCaffeReLU(fuses_relu());
}

void OnednnInnerProductLayer::Backward_cpu(const BlobVec& top,
                                           const std::vector<bool>& propagate_down,
                                           const BlobVec& bottom) {
  if (!backward_prepared_) {
    Build("inner product backward", [&] { PrepareBackward(); });
    backward_prepared_ = true;
  }
  OnednnPlaceInWorkspace(propagate_down[0] ? &data_diff_dst_ : nullptr,
                         propagate_down[0] ? &diff_src_ : nullptr,
                         propagate_down[0] ? &data_weights_ : nullptr);
  Run("inner product backward", [&] {
    const float* top_diff = top[0]->cpu_diff();
    if (this->param_propagate_down(0)) AddWeightGradient(bottom[0]->cpu_data(), top_diff);
    if (bias_term_ && this->param_propagate_down(1)) AddBiasGradient(top_diff);
    if (propagate_down[0]) {
      backward_data_.execute(stream(),
                             {{DNNL_ARG_DIFF_DST, data_diff_dst_.Read(stream(), top_diff)},
                              {DNNL_ARG_WEIGHTS, data_weights_.Get(stream(), *this->blobs_[0])},
                              {DNNL_ARG_DIFF_SRC, diff_src_.Write(bottom[0]->mutable_cpu_diff())}});
      diff_src_.Publish(stream());
    }
  });
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(InnerProduct, ONEDNN, OnednnInnerProductLayer, nullptr);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
