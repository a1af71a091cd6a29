// The oneDNN engine's fusion pass: a Convolution or InnerProduct whose output goes straight
// into an in-place ReLU computes the ReLU itself, as oneDNN's eltwise_relu post-op, and the
// ReLU's Forward does nothing. One pass over the output instead of two, and no second call.
#ifdef DOPPIO_WITH_ONEDNN

#include <algorithm>

#include "doppio/core/layer_fusion.hpp"
#include "doppio/layers/onednn_fusion.hpp"
#include "doppio/layers/onednn_relu_layer.hpp"

namespace doppio {

namespace {

// The first layer after `layer_id` that reads `blob`, or -1.
int FirstReader(const Net<float>& net, int layer_id, const Blob<float>* blob) {
  const auto& bottoms = net.bottom_vecs();
  for (int j = layer_id + 1; j < static_cast<int>(bottoms.size()); ++j) {
    if (std::find(bottoms[j].begin(), bottoms[j].end(), blob) != bottoms[j].end()) return j;
  }
  return -1;
}

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
    if (relu == nullptr || relu->skips_forward() || net.top_vecs()[j][0] != output ||
        relu->negative_slope() < 0) {
      continue;
    }
    fusable->FuseReLU(relu->negative_slope());
    relu->SkipForward();
    LOG(INFO) << "oneDNN fuses " << relu->Describe() << " into " << layers[i]->Describe()
              << " (eltwise_relu post-op)";
  }
}

const LayerFusionRegisterer<float> g_fuse_relu_post_ops(FuseReLUPostOps);

}  // namespace

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
