#include "doppio/layers/onednn_lrn_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

void OnednnLRNLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  LRNLayer<float>::Reshape(bottom, top);
  if (bottom[0]->shape() == prepared_shape_) return;
  prepared_shape_ = bottom[0]->shape();
  prepared_src_ = dnnl::memory::desc();
}

namespace {
dnnl::algorithm Algorithm(LRNParameter::NormRegion region) {
  return region == LRNParameter::ACROSS_CHANNELS ? dnnl::algorithm::lrn_across_channels
                                                 : dnnl::algorithm::lrn_within_channel;
}

// The primitive descriptors of an LRN on `layout`.
struct LRNDescs {
  dnnl::lrn_forward::primitive_desc forward;
  dnnl::lrn_backward::primitive_desc backward;
  bool jit() const {
    return OnednnImplementationIs(forward, "jit") && OnednnImplementationIs(backward, "jit");
  }
};

LRNDescs MakeLRN(const dnnl::engine& engine, dnnl::algorithm algorithm,
                 const dnnl::memory::desc& layout, int size, float alpha, float beta, float k) {
  LRNDescs descs;
  descs.forward = dnnl::lrn_forward::primitive_desc(
      dnnl::lrn_forward::desc(dnnl::prop_kind::forward_training, algorithm, layout, size, alpha,
                              beta, k),
      engine);
  descs.backward = dnnl::lrn_backward::primitive_desc(
      dnnl::lrn_backward::desc(algorithm, layout, layout, size, alpha, beta, k), engine,
      descs.forward);
  return descs;
}

// oneDNN 2.6 has jit LRN kernels for its blocked layouts and NHWC (for some window sizes
// only: across channels 5 in nChw16c, 3 and 7 in NHWC alone; within channels 3 and 5, not 7);
// on Caffe's NCHW the backward pass is plain C++ (AlexNet batch 8, one thread: norm1 261 ms
// against CAFFE's 7). So the layer runs in the layout its input arrives in where that has jit
// kernels, else in the first of nChw16c, nChw8c, NHWC that has them (the input reordered into it,
// the output left in it for the next oneDNN layer), else in the arriving layout. The descriptors
// chosen, or none where no layout has jit kernels.
std::optional<LRNDescs> JitLRN(const dnnl::engine& engine, dnnl::algorithm algorithm,
                               const dnnl::memory::desc& arriving, int size, float alpha,
                               float beta, float k) {
  std::vector<dnnl::memory::desc> layouts{arriving};
  for (const auto tag : {dnnl::memory::format_tag::nChw16c, dnnl::memory::format_tag::nChw8c,
                         dnnl::memory::format_tag::nhwc}) {
    layouts.emplace_back(arriving.dims(), arriving.data_type(), tag);
  }
  for (const auto& layout : layouts) {
    LRNDescs descs = MakeLRN(engine, algorithm, layout, size, alpha, beta, k);
    if (descs.jit()) return descs;
  }
  return std::nullopt;
}
}  // namespace

void OnednnLRNLayer::Prepare(const dnnl::memory::desc& arriving) {
  const auto algorithm = Algorithm(region_);
  const std::optional<LRNDescs> jit =
      JitLRN(engine(), algorithm, arriving, size_, alpha_, beta_, k_);
  const LRNDescs descs =
      jit ? *jit : MakeLRN(engine(), algorithm, arriving, size_, alpha_, beta_, k_);
  forward_ = dnnl::lrn_forward(descs.forward);
  backward_ = dnnl::lrn_backward(descs.backward);
  const auto plain = OnednnPlainDesc(arriving.dims());
  src_.Init(engine(), plain, descs.forward.src_desc());
  dst_.Init(engine(), plain, descs.forward.dst_desc());
  diff_dst_.Init(engine(), plain, descs.backward.diff_dst_desc());
  diff_src_.Init(engine(), plain, descs.backward.diff_src_desc());
  workspace_ = dnnl::memory(descs.forward.workspace_desc(), engine());
  prepared_src_ = arriving;
}

void OnednnLRNLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  SyncedMemory& in = *bottom[0]->data();
  const auto src = OnednnArrivingDesc(in, {num_, channels_, height_, width_}, data_type());
  if (src != prepared_src_) Build("lrn", [&] { Prepare(src); });
  OnednnPlaceInWorkspace(src_.ForRead(in), dst_.ForWrite(*top[0]->data()));
  Run("lrn forward", [&] {
    forward_.execute(stream(), {{DNNL_ARG_SRC, src_.Read(stream(), in)},
                                {DNNL_ARG_DST, dst_.Write(*top[0]->data())},
                                {DNNL_ARG_WORKSPACE, workspace_}});
    dst_.Publish(stream());
  });
}

void OnednnLRNLayer::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                  const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  // The workspace belongs to the primitives Forward ran: the input is read in their layout,
  // whatever layout a reader has turned it to since.
  OnednnPlaceInWorkspace(src_.ForRead(*bottom[0]->data()), diff_dst_.ForRead(*top[0]->diff()),
                         diff_src_.ForWrite(*bottom[0]->diff()));
  Run("lrn backward", [&] {
    backward_.execute(stream(), {{DNNL_ARG_SRC, src_.Read(stream(), *bottom[0]->data())},
                                 {DNNL_ARG_DIFF_DST, diff_dst_.Read(stream(), *top[0]->diff())},
                                 {DNNL_ARG_DIFF_SRC, diff_src_.Write(*bottom[0]->diff())},
                                 {DNNL_ARG_WORKSPACE, workspace_}});
    diff_src_.Publish(stream());
  });
}

namespace {
// DEFAULT runs LRN on oneDNN where oneDNN has jit kernels for its parameters (probed on a
// small blocked tensor): measured in a blocked layout, they beat CAFFE's loops (AlexNet batch
// 8, 1 thread, forward / backward: norm1 2.7 / 2.8 against 4.6 / 5.5 ms, norm2 1.6 / 1.4
// against 3.0 / 3.5), and the blocked layout then stays on to the next layer. Where none has
// them, oneDNN's plain C++ LRN is far slower than CAFFE's (see Prepare), and DEFAULT keeps
// CAFFE. A layer that asks for engine ONEDNN gets it either way.
std::string NotByDefault(const LayerParameter& param) {
  const LRNParameter& lrn = param.lrn_param();
  // Which parameters oneDNN 2.6 has jit kernels for is written in its sources only (and
  // depends on the CPU's instructions): it is probed, once per set of parameters, since a
  // probe builds up to eight primitive descriptors.
  using Key = std::tuple<int, unsigned, float, float, float>;
  static std::mutex mutex;
  static std::map<Key, bool> probed;
  const Key key{lrn.norm_region(), lrn.local_size(), lrn.alpha(), lrn.beta(), lrn.k()};
  std::lock_guard<std::mutex> lock(mutex);
  auto found = probed.find(key);
  if (found == probed.end()) {
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const dnnl::memory::desc probe({2, 32, 16, 16}, dnnl::memory::data_type::f32,
                                   dnnl::memory::format_tag::nchw);
    const bool jit = OnednnCall(param.name(), "lrn", [&] {
      return JitLRN(engine, Algorithm(lrn.norm_region()), probe, lrn.local_size(), lrn.alpha(),
                    lrn.beta(), lrn.k())
          .has_value();
    });
    found = probed.emplace(key, jit).first;
  }
  if (found->second) return "";
  return "oneDNN has no jit LRN kernel for these parameters, and its plain one is slower than "
         "CAFFE's; engine ONEDNN runs it when asked";
}
}  // namespace

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF_PREFERRED(LRN, ONEDNN, OnednnLRNLayer, nullptr, NotByDefault);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
