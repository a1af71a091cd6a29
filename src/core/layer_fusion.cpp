#include "doppio/core/layer_fusion.hpp"

#include <glog/logging.h>

#include <utility>

namespace doppio {

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

}  // namespace doppio
