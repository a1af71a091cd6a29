#include "doppio/core/debug_info.hpp"

#include <glog/logging.h>

namespace doppio {

namespace {

template <typename Dtype>
Dtype MeanAbs(Dtype asum, int count) {
  return count > 0 ? asum / static_cast<Dtype>(count) : Dtype(0);
}

}  // namespace

template <typename Dtype>
void LogForwardDebugInfo(const Net<Dtype>& net, int layer_id) {
  const std::string& layer = net.layer_names()[layer_id];
  for (std::size_t i = 0; i < net.top_vecs()[layer_id].size(); ++i) {
    const Blob<Dtype>& top = *net.top_vecs()[layer_id][i];
    LOG(INFO) << "    [Forward] Layer " << layer << ", top blob "
              << net.blob_names()[net.top_id_vecs()[layer_id][i]]
              << " data: " << MeanAbs(top.asum_data(), top.count());
  }
  const auto& blobs = net.layers()[layer_id]->blobs();
  for (std::size_t i = 0; i < blobs.size(); ++i) {
    LOG(INFO) << "    [Forward] Layer " << layer << ", param blob " << i
              << " data: " << MeanAbs(blobs[i]->asum_data(), blobs[i]->count());
  }
}

template <typename Dtype>
void LogBackwardDebugInfo(const Net<Dtype>& net, int layer_id) {
  if (!net.layer_need_backward()[layer_id]) return;
  const std::string& layer = net.layer_names()[layer_id];
  for (std::size_t i = 0; i < net.bottom_vecs()[layer_id].size(); ++i) {
    if (!net.bottom_need_backward()[layer_id][i]) continue;
    const Blob<Dtype>& bottom = *net.bottom_vecs()[layer_id][i];
    LOG(INFO) << "    [Backward] Layer " << layer << ", bottom blob "
              << net.blob_names()[net.bottom_id_vecs()[layer_id][i]]
              << " diff: " << MeanAbs(bottom.asum_diff(), bottom.count());
  }
  const auto& blobs = net.layers()[layer_id]->blobs();
  for (std::size_t i = 0; i < blobs.size(); ++i) {
    if (!net.layers()[layer_id]->param_propagate_down(static_cast<int>(i))) continue;
    LOG(INFO) << "    [Backward] Layer " << layer << ", param blob " << i
              << " diff: " << MeanAbs(blobs[i]->asum_diff(), blobs[i]->count());
  }
}

template <typename Dtype>
void LogUpdateDebugInfo(const Net<Dtype>& net) {
  const auto& learnable = net.learnable_params();
  for (std::size_t i = 0; i < learnable.size(); ++i) {
    const int param_id = net.learnable_param_ids()[i];
    const int layer_id = net.param_layer_indices()[param_id].first;
    LOG(INFO) << "    [Update] Layer " << net.layer_names()[layer_id] << ", param "
              << net.param_display_names()[param_id]
              << " data: " << MeanAbs(learnable[i]->asum_data(), learnable[i]->count())
              << "; diff: " << MeanAbs(learnable[i]->asum_diff(), learnable[i]->count());
  }
}

template void LogForwardDebugInfo(const Net<float>&, int);
template void LogForwardDebugInfo(const Net<double>&, int);
template void LogBackwardDebugInfo(const Net<float>&, int);
template void LogBackwardDebugInfo(const Net<double>&, int);
template void LogUpdateDebugInfo(const Net<float>&);
template void LogUpdateDebugInfo(const Net<double>&);

}  // namespace doppio
