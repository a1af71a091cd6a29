#include "doppio/layers/onednn_conv_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include <glog/logging.h>

#include <algorithm>

#include "doppio/core/layer_registry.hpp"
#include "doppio/core/net.hpp"
#include "doppio/util/memory_usage.hpp"

namespace doppio {

namespace {
using dnnl::memory;

// A backward primitive descriptor in `algorithm`, or in the direct one where oneDNN has no
// kernel for that (a forward Winograd kernel does not promise backward ones).
template <typename Make>
auto WithDirectFallback(dnnl::algorithm algorithm, const Make& make) {
  if (algorithm != dnnl::algorithm::convolution_direct) {
    try {
      return make(algorithm);
    } catch (const dnnl::error&) {
      // the direct algorithm's below
    }
  }
  return make(dnnl::algorithm::convolution_direct);
}
}  // namespace

std::string OnednnConvolutionLayer::Unsupported(const LayerParameter& param) {
  const auto& conv = param.convolution_param();
  if (conv.axis() != 1) return "oneDNN convolves channels on axis 1 only";
  if (conv.kernel_size_size() > 2 || conv.pad_size() > 2 || conv.stride_size() > 2 ||
      conv.dilation_size() > 2) {
    return "oneDNN's engine here convolves 2 spatial axes only";
  }
  return "";
}

OnednnConvolutionLayer::Shapes OnednnConvolutionLayer::ConvShapes() const {
  Shapes s;
  s.src = {num_, channels_, input_shape_[0], input_shape_[1]};
  if (group_ == 1) {
    s.weights = {num_output_, channels_, kernel_h_, kernel_w_};
  } else {
    s.weights = {group_, num_output_ / group_, channels_ / group_, kernel_h_, kernel_w_};
  }
  s.bias = {num_output_};
  s.dst = {num_, num_output_, output_shape_[0], output_shape_[1]};
  s.strides = {stride_h_, stride_w_};
  s.dilates = {dilation_h_ - 1, dilation_w_ - 1};
  s.pad_l = {pad_h_, pad_w_};
  // Caffe's output size floors like oneDNN's, so the same padding on both sides agrees.
  s.pad_r = {pad_h_, pad_w_};
  return s;
}

void OnednnConvolutionLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  ConvolutionLayer<float>::Reshape(bottom, top);
  DOPPIO_ENSURE(bottom[0]->num_axes() == 4)
      << this->Describe() << ": engine ONEDNN needs 4-d (N, C, H, W) bottoms, got "
      << bottom[0]->shape_string();
  top_count_ = static_cast<int>(top.size());
  if (bottom[0]->shape() == prepared_shape_) return;
  Build("convolution forward", [&] { PrepareForward(); });
  prepared_shape_ = bottom[0]->shape();
  backward_prepared_ = false;
}

dnnl::convolution_forward::primitive_desc OnednnConvolutionLayer::ForwardPrimitive(
    dnnl::algorithm algorithm, bool without_relu, dnnl::scratchpad_mode scratchpad) const {
  const Shapes s = ConvShapes();
  // Without the post-op, in the fused primitive's layouts: both write the tensors set up for it.
  // In bf16 the bias stays f32, as oneDNN's bf16 kernels take it.
  const memory::data_type type = data_type();
  const memory::desc src = without_relu ? forward_pd_.src_desc() : OnednnAnyDesc(s.src, type);
  const memory::desc weights =
      without_relu ? forward_pd_.weights_desc() : OnednnAnyDesc(s.weights, type);
  const memory::desc bias = without_relu ? forward_pd_.bias_desc() : OnednnAnyDesc(s.bias);
  const memory::desc dst = without_relu ? forward_pd_.dst_desc() : OnednnAnyDesc(s.dst, type);
  const auto desc =
      bias_term_
          ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algorithm, src,
                                            weights, bias, dst, s.strides, s.dilates, s.pad_l,
                                            s.pad_r)
          : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algorithm, src,
                                            weights, dst, s.strides, s.dilates, s.pad_l, s.pad_r);
  dnnl::primitive_attr attr = without_relu ? dnnl::primitive_attr() : PostOps();
  attr.set_scratchpad_mode(scratchpad);
  return dnnl::convolution_forward::primitive_desc(desc, attr, engine());
}

void OnednnConvolutionLayer::PrepareForward() {
  // Winograd's F(4x4, 3x3) where oneDNN has a jit kernel for it (3x3, stride 1, one group,
  // AVX-512, channels in blocks of 16): on ResNet-50's 3x3 shapes at batch 8 on one AVX-512
  // core it took 5.9 to 13 ms per direction where the direct kernel took 14 to 24 ms (about
  // 2.5x on 56x56 and 28x28, 1.3 to 1.8x on 7x7), in every direction. It rounds differently:
  // within 1e-3 of the direct result relative to the output's RMS (the tests' bound).
  algorithm_ = dnnl::algorithm::convolution_direct;
  winograd_scratchpad_bytes_ = 0;
  bool winograd = false;
  if (this->cpu_options().onednn_winograd && kernel_h_ == 3 && kernel_w_ == 3 && stride_h_ == 1 &&
      stride_w_ == 1 && dilation_h_ == 1 && dilation_w_ == 1 && group_ == 1) {
    try {
      forward_pd_ = ForwardPrimitive(dnnl::algorithm::convolution_winograd);
      winograd = OnednnImplementationIs(forward_pd_, "wino");
    } catch (const dnnl::error&) {
      // No Winograd kernel for this shape or machine: the direct one below.
    }
    if (winograd) {
      winograd_scratchpad_bytes_ = ForwardPrimitive(dnnl::algorithm::convolution_winograd, false,
                                                    dnnl::scratchpad_mode::user)
                                       .scratchpad_desc()
                                       .get_size();
      winograd = winograd_scratchpad_bytes_ <= winograd_limit_;
    }
  }
  if (winograd) {
    algorithm_ = dnnl::algorithm::convolution_winograd;
  } else {
    forward_pd_ = ForwardPrimitive(dnnl::algorithm::convolution_direct);
  }
  forward_ = dnnl::convolution_forward(forward_pd_);
  forward_without_relu_ = dnnl::convolution_forward();
  const Shapes s = ConvShapes();
  src_.Init(engine(), OnednnPlainDesc(s.src), forward_pd_.src_desc());
  dst_.Init(engine(), OnednnPlainDesc(s.dst), forward_pd_.dst_desc());
  const bool kept = this->phase_ == TEST;
  weights_.Init(engine(), OnednnPlainDesc(s.weights), forward_pd_.weights_desc(), kept);
  if (bias_term_) bias_.Init(engine(), OnednnPlainDesc(s.bias), forward_pd_.bias_desc(), kept);
}

void OnednnConvolutionLayer::PrepareBackward() {
  const Shapes s = ConvShapes();
  // In bf16 the parameter gradients are f32: they add into the fp32 arena.
  const memory::data_type type = data_type();
  const auto data_pd = WithDirectFallback(algorithm_, [&](dnnl::algorithm algorithm) {
    return dnnl::convolution_backward_data::primitive_desc(
        dnnl::convolution_backward_data::desc(
            algorithm, OnednnAnyDesc(s.src, type), OnednnAnyDesc(s.weights, type),
            OnednnAnyDesc(s.dst, type), s.strides, s.dilates, s.pad_l, s.pad_r),
        engine(), forward_pd_);
  });
  backward_data_ = dnnl::convolution_backward_data(data_pd);
  data_diff_dst_.Init(engine(), OnednnPlainDesc(s.dst), data_pd.diff_dst_desc());
  diff_src_.Init(engine(), OnednnPlainDesc(s.src), data_pd.diff_src_desc());
  share_weights_ = data_pd.weights_desc() == forward_pd_.weights_desc();
  if (!share_weights_) {
    data_weights_.Init(engine(), OnednnPlainDesc(s.weights), data_pd.weights_desc(), false);
  }

  const auto weights_pd = WithDirectFallback(algorithm_, [&](dnnl::algorithm algorithm) {
    const auto desc = bias_term_
                          ? dnnl::convolution_backward_weights::desc(
                                algorithm, OnednnAnyDesc(s.src, type), OnednnAnyDesc(s.weights),
                                OnednnAnyDesc(s.bias), OnednnAnyDesc(s.dst, type), s.strides,
                                s.dilates, s.pad_l, s.pad_r)
                          : dnnl::convolution_backward_weights::desc(
                                algorithm, OnednnAnyDesc(s.src, type), OnednnAnyDesc(s.weights),
                                OnednnAnyDesc(s.dst, type), s.strides, s.dilates, s.pad_l, s.pad_r);
    return dnnl::convolution_backward_weights::primitive_desc(desc, engine(), forward_pd_);
  });
  backward_weights_ = dnnl::convolution_backward_weights(weights_pd);
  weights_src_.Init(engine(), OnednnPlainDesc(s.src), weights_pd.src_desc());
  weights_diff_dst_.Init(engine(), OnednnPlainDesc(s.dst), weights_pd.diff_dst_desc());
  share_diff_dst_ = weights_pd.diff_dst_desc() == data_pd.diff_dst_desc();
  diff_weights_.Init(engine(), weights_pd.diff_weights_desc(), OnednnPlainDesc(s.weights));
  if (bias_term_) diff_bias_.Init(engine(), weights_pd.diff_bias_desc(), OnednnPlainDesc(s.bias));
}

void OnednnConvolutionLayer::LimitWinograd(std::size_t scratchpad_bytes) {
  winograd_limit_ = scratchpad_bytes;
  if (winograd() && winograd_scratchpad_bytes_ > winograd_limit_) {
    LOG(INFO) << this->Describe() << ": the direct algorithm: Winograd's would take "
              << FormatMebibytes(winograd_scratchpad_bytes_) << " of scratchpad, more than the "
              << FormatMebibytes(winograd_limit_) << " this net allows";
    RecreateForward();
  }
  // Its rounding differs from the direct algorithm's: said once, with how to turn it off.
  if (winograd() && !winograd_logged_) {
    LOG(INFO) << this->Describe()
              << ": Winograd's algorithm (doppio --onednn_winograd=false: the direct one)";
    winograd_logged_ = true;
  }
}

// Winograd's scratchpad holds the transformed weights and the whole batch's transformed tiles,
// and oneDNN keeps the largest one it was asked for as long as the process runs. Measured at
// batch 8 (forward scratchpad, against what the net needs in parameters and activations):
// AlexNet conv3 31 MiB of 551 (it raised AlexNet's peak from 634 to 680 MiB, above BVLC
// Caffe's 637), GoogLeNet conv2/3x3 63 MiB of 634, ResNet-50 7-24 MiB of 1421 (res2-res4)
// and 46 MiB (res5). A convolution runs Winograd only where its scratchpad is at most 1/50
// of what its net needs, or 16 MiB, whichever is more: the peak then stays within 2% of the
// net's (AlexNet and GoogLeNet at or below Caffe's), ResNet-50's res2-res4 keep Winograd,
// and small nets, whose scratchpads take a few MiB, keep it too.
void LimitWinogradScratchpads(const Net<float>& net) {
  const std::size_t limit =
      std::max<std::size_t>((net.parameter_bytes() + net.activation_bytes()) / 50, 16u << 20);
  for (const auto& layer : net.layers()) {
    if (auto* conv = dynamic_cast<OnednnConvolutionLayer*>(layer.get())) conv->LimitWinograd(limit);
  }
}

void OnednnConvolutionLayer::RecreateForward() {
  if (prepared_shape_.empty()) return;
  Build("convolution forward with relu", [&] { PrepareForward(); });
  backward_prepared_ = false;
}

bool OnednnConvolutionLayer::OutputMayHoldNaN(const BlobVec& bottom) {
  const float weights = weights_magnitude_.Get(*this->blobs_[0]);
  const float bias = bias_term_ ? bias_magnitude_.Get(*this->blobs_[1]) : 0.f;
  // Each output sums this many products of an input and a weight, then adds the bias.
  const double terms = double(channels_ / group_) * kernel_h_ * kernel_w_;
  return std::any_of(bottom.begin(), bottom.end(), [&](const Blob<float>* blob) {
    const float input = OnednnHeldMaxMagnitude(*blob->data(), blob->count());
    return !OnednnBoundStaysFinite(terms * double(input) * double(weights) + double(bias));
  });
}

void OnednnConvolutionLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  CountForward();
  UseOnednnThreads();
  const bool caffe_relu = fuses_relu() && OutputMayHoldNaN(bottom);
  SetRanCaffeReLU(caffe_relu);
  if (caffe_relu && !forward_without_relu_) {
    Build("convolution forward without relu", [&] {
      forward_without_relu_ = dnnl::convolution_forward(ForwardPrimitive(algorithm_, true));
    });
  }
  const dnnl::convolution_forward& forward = caffe_relu ? forward_without_relu_ : forward_;
  // With more than one bottom, one of them may need the copy where another does not.
  OnednnPlaceInWorkspace(bottom.size() == 1 ? src_.ForRead(*bottom[0]->data()) : &src_,
                         top.size() == 1 ? dst_.ForWrite(*top[0]->data()) : &dst_, &weights_,
                         &bias_);
  Run("convolution forward", [&] {
    OnednnArgs args{{DNNL_ARG_WEIGHTS, weights_.Get(stream(), *this->blobs_[0])}};
    if (bias_term_) args[DNNL_ARG_BIAS] = bias_.Get(stream(), *this->blobs_[1]);
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      args[DNNL_ARG_SRC] = src_.Read(stream(), *bottom[i]->data());
      args[DNNL_ARG_DST] = dst_.Write(*top[i]->data());
      forward.execute(stream(), args);
      if (caffe_relu) {
        stream().wait();
        OnednnReLUInPlace(dst_.primitive(), relu_slope());
      }
      dst_.Publish(stream());
    }
  });
}

void OnednnConvolutionLayer::Backward_cpu(const BlobVec& top,
                                          const std::vector<bool>& propagate_down,
                                          const BlobVec& bottom) {
  if (!backward_prepared_) {
    Build("convolution backward", [&] { PrepareBackward(); });
    backward_prepared_ = true;
  }
  const bool weight_diff = this->param_propagate_down(0);
  const bool bias_diff = bias_term_ && this->param_propagate_down(1);
  const bool params = weight_diff || bias_diff;
  const bool data = std::any_of(propagate_down.begin(), propagate_down.end(),
                                [](bool propagate) { return propagate; });
  // Only the copies this call reads or writes: the first layer's input diff (3 channels
  // padded to 16), which nothing reads, took 26 MiB of AlexNet's 45 at batch 8. With more
  // than one top, one may need a copy where another does not.
  const bool one = top.size() == 1;
  const auto read = [&](OnednnTensor& tensor, const SyncedMemory& blob) {
    return one ? tensor.ForRead(blob) : &tensor;
  };
  OnednnTensor* params_src = params ? read(weights_src_, *bottom[0]->data()) : nullptr;
  OnednnTensor* params_diff_dst = params ? read(weights_diff_dst_, *top[0]->diff()) : nullptr;
  // The weight gradient's read turns a top diff held in another layout to Caffe's first.
  OnednnTensor* data_diff_dst = !data || (share_diff_dst_ && params) ? nullptr
                                : params                             ? &data_diff_dst_
                                         : read(data_diff_dst_, *top[0]->diff());
  OnednnTensor* diff_src = !data ? nullptr
                           : one ? diff_src_.ForWrite(*bottom[0]->diff())
                                 : &diff_src_;
  OnednnParamData* data_weights = !data ? nullptr : share_weights_ ? &weights_ : &data_weights_;
  OnednnPlaceInWorkspace(params_src, params_diff_dst, weight_diff ? &diff_weights_ : nullptr,
                         bias_diff ? &diff_bias_ : nullptr, data_diff_dst, diff_src, data_weights);
  Run("convolution backward", [&] {
    for (std::size_t i = 0; i < top.size(); ++i) {
      SyncedMemory& top_diff = *top[i]->diff();
      if (weight_diff || bias_diff) {
        OnednnArgs args{{DNNL_ARG_SRC, weights_src_.Read(stream(), *bottom[i]->data())},
                        {DNNL_ARG_DIFF_DST, weights_diff_dst_.Read(stream(), top_diff)},
                        {DNNL_ARG_DIFF_WEIGHTS, diff_weights_.scratch()}};
        if (bias_term_) args[DNNL_ARG_DIFF_BIAS] = diff_bias_.scratch();
        backward_weights_.execute(stream(), args);
        if (weight_diff) diff_weights_.AddTo(stream(), this->blobs_[0]->mutable_cpu_diff());
        if (bias_diff) diff_bias_.AddTo(stream(), this->blobs_[1]->mutable_cpu_diff());
      }
      if (propagate_down[i]) {
        // The top diff the weight gradient read serves here too when the layouts agree.
        const dnnl::memory& diff_dst = share_diff_dst_ && (weight_diff || bias_diff)
                                           ? weights_diff_dst_.primitive()
                                           : data_diff_dst_.Read(stream(), top_diff);
        OnednnParamData& weights = share_weights_ ? weights_ : data_weights_;
        backward_data_.execute(stream(),
                               {{DNNL_ARG_DIFF_DST, diff_dst},
                                {DNNL_ARG_WEIGHTS, weights.Get(stream(), *this->blobs_[0])},
                                {DNNL_ARG_DIFF_SRC, diff_src_.Write(*bottom[i]->diff())}});
        diff_src_.Publish(stream());
      }
    }
  });
}

namespace {
// DEFAULT keeps CAFFE for a convolution whose output channels per group are not a multiple
// of 16: oneDNN's fast kernels pad them to the next block of 16 (and the next layer's input
// channels with them), while Caffe's im2col + GEMM computes only what is there. Measured on
// LeNet (20 and 50 outputs, batch 64, 1 thread, AMD EPYC): conv2 3.9 / 8.4 ms forward /
// backward on oneDNN against 2.9 / 5.9 on CAFFE, conv1 1.1 / 1.0 against 0.6 / 0.6; every
// other published net here has multiples of 16. A layer that asks for engine ONEDNN gets it.
std::string NotByDefault(const LayerParameter& param) {
  const ConvolutionParameter& conv = param.convolution_param();
  const unsigned group = std::max(conv.group(), 1u);
  if (conv.num_output() % group == 0 && (conv.num_output() / group) % 16 == 0) return "";
  return "its output channels per group are not a multiple of 16, which oneDNN pads and Caffe's "
         "GEMM does not; engine ONEDNN runs it when asked";
}
}  // namespace

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF_PREFERRED(Convolution, ONEDNN, OnednnConvolutionLayer,
                                                OnednnConvolutionLayer::Unsupported, NotByDefault);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
