#include "doppio/core/layer_fusion.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <utility>

#include "doppio/util/error.hpp"

namespace doppio {

void FusionGuest::CheckHostRan(const std::string& guest) {
  DOPPIO_ENSURE(host_->forwards() != seen_forwards_)
      << guest << " runs inside " << host_name_ << " (fused), whose Forward has not run since "
      << "this layer's last: a forward pass must start at " << host_name_
      << " or before it (Net::ForwardFromTo), not between the two";
  seen_forwards_ = host_->forwards();
}

template <typename Dtype>
int FirstReader(const Net<Dtype>& net, int layer_id, const Blob<Dtype>* blob) {
  const auto& bottoms = net.bottom_vecs();
  for (int j = layer_id + 1; j < static_cast<int>(bottoms.size()); ++j) {
    if (std::find(bottoms[j].begin(), bottoms[j].end(), blob) != bottoms[j].end()) return j;
  }
  return -1;
}

template <typename Dtype>
bool InPlaceOn(const Net<Dtype>& net, int layer_id, const Blob<Dtype>* blob) {
  const auto& bottom = net.bottom_vecs()[layer_id];
  const auto& top = net.top_vecs()[layer_id];
  return bottom.size() == 1 && top.size() == 1 && bottom[0] == blob && top[0] == blob;
}

template <typename Dtype>
std::vector<typename LayerFusions<Dtype>::EngineList>& LayerFusions<Dtype>::Lists() {
  static std::vector<EngineList> lists;
  return lists;
}

template <typename Dtype>
void LayerFusions<Dtype>::Register(const std::string& engine, std::vector<Pass> passes) {
  for (const EngineList& list : Lists()) {
    CHECK_NE(list.engine, engine) << "engine " << engine << " registers its fusion passes twice";
  }
  Lists().push_back({engine, std::move(passes)});
}

template <typename Dtype>
std::vector<std::string> LayerFusions<Dtype>::PassNames(const std::string& engine) {
  std::vector<std::string> names;
  for (const EngineList& list : Lists()) {
    if (list.engine != engine) continue;
    for (const Pass& pass : list.passes) names.push_back(pass.name);
  }
  return names;
}

template <typename Dtype>
void LayerFusions<Dtype>::Run(const Net<Dtype>& net) {
  for (const EngineList& list : Lists()) {
    for (const Pass& pass : list.passes) pass.run(net);
  }
}

DOPPIO_INSTANTIATE_CLASS(LayerFusions);
template int FirstReader(const Net<float>&, int, const Blob<float>*);
template int FirstReader(const Net<double>&, int, const Blob<double>*);
template bool InPlaceOn(const Net<float>&, int, const Blob<float>*);
template bool InPlaceOn(const Net<double>&, int, const Blob<double>*);

}  // namespace doppio
