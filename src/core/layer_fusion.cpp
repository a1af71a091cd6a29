#include "doppio/core/layer_fusion.hpp"

namespace doppio {

template <typename Dtype>
std::vector<typename LayerFusions<Dtype>::Pass>& LayerFusions<Dtype>::Passes() {
  static std::vector<Pass> passes;
  return passes;
}

template <typename Dtype>
void LayerFusions<Dtype>::Add(Pass pass) {
  Passes().push_back(pass);
}

template <typename Dtype>
void LayerFusions<Dtype>::Run(const Net<Dtype>& net) {
  for (Pass pass : Passes()) pass(net);
}

DOPPIO_INSTANTIATE_CLASS(LayerFusions);

}  // namespace doppio
