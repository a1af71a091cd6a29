#include "doppio/layers/batch_norm_scale_pairs.hpp"

#include <cstring>

#include "doppio/core/layer_fusion.hpp"
#include "doppio/layers/batch_norm_layer.hpp"

namespace doppio {

template <typename Dtype>
std::vector<std::pair<int, int>> BatchNormScalePairs(const Net<Dtype>& net) {
  std::vector<std::pair<int, int>> pairs;
  const auto& layers = net.layers();
  const auto& need_backward = net.layer_need_backward();
  for (int i = 0; i < static_cast<int>(layers.size()); ++i) {
    const auto* batch_norm = dynamic_cast<const BatchNormLayer<Dtype>*>(layers[i].get());
    if (batch_norm == nullptr || batch_norm->use_global_stats()) continue;
    Blob<Dtype>* blob = net.top_vecs()[i][0];
    if (blob->num_axes() < 2) continue;
    const int k = FirstReader(net, i, blob);
    if (k < 0 || std::strcmp(layers[k]->type(), "Scale") != 0 || !InPlaceOn(net, k, blob)) {
      continue;
    }
    const ScaleParameter& scale_param = layers[k]->layer_param().scale_param();
    const auto& scale_blobs = layers[k]->blobs();
    if (blob->CanonicalAxisIndex(scale_param.axis()) != 1 || scale_blobs.empty() ||
        scale_blobs[0]->num_axes() != 1 || scale_blobs[0]->count() != blob->shape(1)) {
      continue;
    }
    if (need_backward[k] && !need_backward[i]) continue;
    pairs.emplace_back(i, k);
  }
  return pairs;
}

template std::vector<std::pair<int, int>> BatchNormScalePairs(const Net<float>&);
template std::vector<std::pair<int, int>> BatchNormScalePairs(const Net<double>&);

}  // namespace doppio
