// The oneDNN engine's fusion passes:
// - a Convolution, InnerProduct or Eltwise SUM of two (ResNet's shortcut) whose output goes
//   straight into an in-place ReLU computes the ReLU itself (OnednnReLUFusable), and the
//   ReLU's Forward does nothing: one pass over the output instead of two, and no second call;
// - a BatchNorm followed by an in-place Scale (ResNet's pattern), and maybe an in-place ReLU,
//   computes all three in one batch normalization primitive with scale, shift and
//   fuse_norm_relu, forward and backward: two passes over the activations instead of five
//   each way, and no copy of the Scale's input;
// - an Eltwise SUM leaves a bottom's diff of coefficient 1, a copy of its top's, to a reader
//   that can read the top's diff instead;
// - in a bf16 net, a ReLU, Pooling, LRN or Eltwise whose inputs all come from fp32 layers runs
//   fp32 (mixed precision).
#ifdef DOPPIO_WITH_ONEDNN

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "doppio/core/layer_fusion.hpp"
#include "doppio/layers/onednn_batch_norm_layer.hpp"
#include "doppio/layers/onednn_conv_layer.hpp"
#include "doppio/layers/onednn_eltwise_layer.hpp"
#include "doppio/layers/onednn_fusion.hpp"
#include "doppio/layers/onednn_relu_layer.hpp"
#include "doppio/layers/onednn_scale_layer.hpp"
#include "doppio/layers/relu_layer.hpp"
#include "doppio/util/half.hpp"

namespace doppio {

bool OnednnBoundStaysFinite(double bound) {
  // FLT_MAX is just under 2^128; a NaN compares false.
  constexpr double kLimit = 0x1p104;
  return bound < kLimit;
}

void OnednnReLUInPlace(const dnnl::memory& memory, float negative_slope) {
  if (memory.get_desc().data_type() == dnnl::memory::data_type::bf16) {
    auto* y = static_cast<std::uint16_t*>(memory.get_data_handle());
    const std::size_t count = memory.get_desc().get_size() / sizeof(std::uint16_t);
    for (std::size_t i = 0; i < count; ++i) {
      y[i] = FloatToBfloat16(ReLUValue(Bfloat16ToFloat(y[i]), negative_slope));
    }
    return;
  }
  float* y = static_cast<float*>(memory.get_data_handle());
  const std::size_t count = memory.get_desc().get_size() / sizeof(float);
  for (std::size_t i = 0; i < count; ++i) y[i] = ReLUValue(y[i], negative_slope);
}

namespace {

// Fuses where the result is exactly the unfused one, forward and backward, in TEST and TRAIN:
// - the ReLU is the first layer to read the layer's only top, and runs in place on it, so
//   no layer and no user can see the layer's output before the ReLU. Where another
//   layer also reads it, the net has a Split between them and there is nothing to fuse;
// - its negative_slope is 0 or more: the fused output then has the unfused output's
//   sign, which is what the ReLU's Backward reads (the CAFFE and ONEDNN ReLUs alike), and the
//   layer's own Backward reads its input and the top's diff, never its output.
// Both must run on oneDNN (the classes are the ONEDNN engine's; a convolution that fell back
// to the CAFFE kernels for its shape says so through CanFuseReLU).
void FuseReLUPostOps(const Net<float>& net) {
  const auto& layers = net.layers();
  for (int i = 0; i < static_cast<int>(layers.size()); ++i) {
    auto* fusable = dynamic_cast<OnednnReLUFusable*>(layers[i].get());
    if (fusable == nullptr || !fusable->CanFuseReLU()) continue;
    Blob<float>* output = net.top_vecs()[i][0];
    const int j = FirstReader(net, i, output);
    if (j < 0) continue;
    auto* relu = dynamic_cast<OnednnReLULayer*>(layers[j].get());
    if (relu == nullptr || relu->fused() || net.top_vecs()[j][0] != output ||
        relu->negative_slope() < 0) {
      continue;
    }
    fusable->FuseReLU(relu->negative_slope());
    relu->FuseInto(*fusable, layers[i]->Describe());
    LOG(INFO) << "oneDNN fuses " << relu->Describe() << " into " << layers[i]->Describe()
              << " (eltwise_relu post-op)";
  }
}

// Fuses where the fused primitive computes what the layers would, forward and backward:
// - all of them run in place on one blob (nothing else can read the values in between: a
//   second reader would need a Split, and an in-place layer on a blob that a later layer
//   also reads is refused by the net), the Scale the first layer to read the BatchNorm's
//   output and the ReLU the first to read the Scale's;
// - the Scale learns one factor per channel (one bottom, axis 1, one axis), as oneDNN's scale;
// - the ReLU has slope 0 (fuse_norm_relu has no other) and its ONEDNN engine;
// - where the Scale needs Backward, so does the BatchNorm, which then computes the Scale's
//   parameter gradients (a BatchNorm whose bottom needs no gradient and whose statistics
//   learn nothing would have no Backward call). The ReLU's needs are the Scale's.
void FuseBatchNormScaleReLU(const Net<float>& net) {
  const auto& layers = net.layers();
  const auto& need_backward = net.layer_need_backward();
  for (int i = 0; i < static_cast<int>(layers.size()); ++i) {
    auto* batch_norm = dynamic_cast<OnednnBatchNormLayer*>(layers[i].get());
    if (batch_norm == nullptr || batch_norm->fused()) continue;
    Blob<float>* blob = net.top_vecs()[i][0];
    if (!InPlaceOn(net, i, blob) || blob->num_axes() < 2) continue;
    const int k = FirstReader(net, i, blob);
    if (k < 0) continue;
    auto* scale = dynamic_cast<OnednnScaleLayer*>(layers[k].get());
    if (scale == nullptr || scale->fused() || !InPlaceOn(net, k, blob)) continue;
    const ScaleParameter& scale_param = layers[k]->layer_param().scale_param();
    if (blob->CanonicalAxisIndex(scale_param.axis()) != 1 ||
        layers[k]->blobs()[0]->num_axes() != 1 ||
        layers[k]->blobs()[0]->count() != blob->shape(1)) {
      continue;
    }
    if (need_backward[k] && !need_backward[i]) continue;
    const int j = FirstReader(net, k, blob);
    auto* relu = j < 0 ? nullptr : dynamic_cast<OnednnReLULayer*>(layers[j].get());
    const bool with_relu = relu != nullptr && !relu->fused() && InPlaceOn(net, j, blob) &&
                           relu->negative_slope() == 0 && need_backward[j] == need_backward[k];
    batch_norm->FuseScale(layers[k].get(), with_relu);
    scale->FuseInto(*batch_norm, layers[i]->Describe());
    std::string what = layers[k]->Describe();
    if (with_relu) {
      relu->FuseInto(*batch_norm, layers[i]->Describe());
      relu->SkipBackward();
      what += " and " + layers[j]->Describe();
    }
    LOG(INFO) << "oneDNN fuses " << what << " into " << layers[i]->Describe()
              << " (batch normalization with scale and shift"
              << (with_relu ? ", fuse_norm_relu)" : ")");
  }
}

// The layers that read or write `blob`, in the net's order.
std::vector<int> Touching(const Net<float>& net, const Blob<float>* blob) {
  std::vector<int> layers;
  for (int j = 0; j < static_cast<int>(net.layers().size()); ++j) {
    const auto& bottom = net.bottom_vecs()[j];
    const auto& top = net.top_vecs()[j];
    if (std::count(bottom.begin(), bottom.end(), blob) + std::count(top.begin(), top.end(), blob))
      layers.push_back(j);
  }
  return layers;
}

// The fused BatchNorm whose in-place chain (the BatchNorm, then its fused Scale and ReLU)
// writes `blob` last before the layer touching.back(), with nothing else reading or writing
// it between: its index, or -1. `touching`: Touching(net, blob).
int FusedBatchNormBefore(const Net<float>& net, const Blob<float>* blob,
                         const std::vector<int>& touching) {
  for (auto j = touching.rbegin() + 1; j != touching.rend(); ++j) {
    if (!InPlaceOn(net, *j, blob)) return -1;
    Layer<float>* layer = net.layers()[*j].get();
    if (auto* batch_norm = dynamic_cast<OnednnBatchNormLayer*>(layer)) {
      return batch_norm->fused() ? *j : -1;
    }
    auto* guest = dynamic_cast<OnednnFusionGuest*>(layer);
    if (guest == nullptr || !guest->fused()) return -1;
  }
  return -1;
}

// Eltwise SUM's Backward gives a bottom of coefficient 1 a copy of the top's diff (ResNet-50's
// shortcut additions: 32 copies of up to 25 MB at batch 8). The top's diff is not written
// after the Eltwise's Backward (its writers, the top's readers, ran before it), so a reader
// that reads the top's diff instead reads what the copy would hold. No copy is made where:
// - the bottom is a Split's top that only the Eltwise reads: the Split's Backward only reads
//   its tops' diffs, so the bottom shares the top's diff for good;
// - the bottom is the in-place blob of a fused BatchNorm (+ Scale + ReLU) that only the
//   Eltwise reads after them, and the BatchNorm needs Backward: it reads the top's diff and
//   writes the bottom's, which it overwrote in place before.
// Every blob's diff after a Backward is then what Caffe's copies give; only between the
// Eltwise's Backward and the BatchNorm's does the bottom's diff not hold the copy yet.
void LendSumDiffs(const Net<float>& net) {
  const auto& layers = net.layers();
  for (int i = 0; i < static_cast<int>(layers.size()); ++i) {
    auto* sum = dynamic_cast<OnednnEltwiseLayer*>(layers[i].get());
    if (sum == nullptr) continue;
    const auto& bottom = net.bottom_vecs()[i];
    Blob<float>* top = net.top_vecs()[i][0];
    for (int k = 0; k < static_cast<int>(bottom.size()); ++k) {
      Blob<float>* blob = bottom[k];
      if (blob == top || sum->coeff(k) != 1.f ||
          std::count(bottom.begin(), bottom.end(), blob) != 1) {
        continue;
      }
      const std::vector<int> touching = Touching(net, blob);
      if (touching.back() != i || touching.size() < 2) continue;
      const int writer = touching[touching.size() - 2];
      const auto& writer_bottom = net.bottom_vecs()[writer];
      if (touching.size() == 2 && std::string(layers[writer]->type()) == "Split" &&
          std::find(writer_bottom.begin(), writer_bottom.end(), blob) == writer_bottom.end()) {
        sum->ShareDiffWithTop(k);
        LOG(INFO) << sum->Describe() << " shares its top's diff with bottom " << k << ", which "
                  << layers[writer]->Describe() << " alone reads";
        continue;
      }
      const int j = FusedBatchNormBefore(net, blob, touching);
      if (j < 0 || !net.layer_need_backward()[j]) continue;
      auto* batch_norm = static_cast<OnednnBatchNormLayer*>(layers[j].get());
      batch_norm->ReadDiffFromSum(sum, top);
      sum->LeaveDiffToReader(k);
      LOG(INFO) << batch_norm->Describe() << " reads its top's diff from " << sum->Describe()
                << "'s top, which leaves bottom " << k << "'s unwritten";
    }
  }
}

// Whether a layer before `layer_id` that writes `blob` (through Splits, which pass their
// bottom on) runs bf16.
bool WrittenInBf16Before(const Net<float>& net, int layer_id, const Blob<float>* blob) {
  for (int j = layer_id - 1; j >= 0; --j) {
    const auto& top = net.top_vecs()[j];
    if (std::find(top.begin(), top.end(), blob) == top.end()) continue;
    const Layer<float>& writer = *net.layers()[j];
    if (writer.precision().storage == BF16) return true;
    if (std::string(writer.type()) == "Split" &&
        WrittenInBf16Before(net, j, net.bottom_vecs()[j][0])) {
      return true;
    }
  }
  return false;
}

// The layers that compute little per value (ReLU, Pooling, LRN, Eltwise) run bf16 only where
// an input arrives in bf16: after an fp32 layer, converting their inputs to bf16 and their
// outputs back for the fp32 layers around them cost more than bf16 saves (LeNet, whose
// convolutions stay on CAFFE, trained 0.74x as fast in bf16 with its poolings in bf16, 0.85x
// with them in fp32). Their
// primitives are built at their first Forward, after this. A layer that names bf16 keeps it.
void Bf16WhereInputsAre(const Net<float>& net) {
  const auto& layers = net.layers();
  for (int i = 0; i < static_cast<int>(layers.size()); ++i) {
    Layer<float>* layer = layers[i].get();
    const std::string type = layer->type();
    if (layer->precision().storage != BF16 || NamesItsPrecision(layer->layer_param()) ||
        (type != "ReLU" && type != "Pooling" && type != "LRN" && type != "Eltwise")) {
      continue;
    }
    const auto& bottom = net.bottom_vecs()[i];
    if (std::none_of(bottom.begin(), bottom.end(),
                     [&](const Blob<float>* blob) { return WrittenInBf16Before(net, i, blob); })) {
      layer->set_precision_request(FP32);
    }
  }
}

// The order matters once: LendSumDiffs lends an Eltwise's diff to a BatchNorm only where
// that BatchNorm is fused already, so it runs after FuseBatchNormScaleReLU. The ReLU and
// BatchNorm passes fuse disjoint patterns (a post-op's ReLU reads a Convolution's,
// InnerProduct's or Eltwise's top first; the BatchNorm's reads its Scale's), so their order
// between themselves is free. The Winograd limit chooses the convolutions' algorithm first,
// which the ReLU post-ops then keep when they prepare a convolution again. Bf16WhereInputsAre
// runs last, once a fused BatchNorm says it runs bf16.
const LayerFusionRegisterer<float> g_onednn_fusions(
    "ONEDNN", {{"Winograd scratchpad limit", LimitWinogradScratchpads},
               {"ReLU post-ops", FuseReLUPostOps},
               {"BatchNorm + Scale + ReLU", FuseBatchNormScaleReLU},
               {"Eltwise SUM lends diffs", LendSumDiffs},
               {"bf16 where the inputs are", Bf16WhereInputsAre}});

}  // namespace

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
