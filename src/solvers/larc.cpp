#include "doppio/solvers/larc.hpp"

#include <algorithm>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

void CheckLarcParameters(const SolverParameter& param) {
  DOPPIO_ENSURE(param.larc_eta() > 0)
      << "solver: larc_eta must be positive, not " << param.larc_eta();
  DOPPIO_ENSURE(param.larc_policy() == "scale" || param.larc_policy() == "clip")
      << "solver: unknown larc_policy '" << param.larc_policy() << "'; known policies: clip scale";
  if (!param.larc()) return;
  DOPPIO_ENSURE(param.type() == "SGD" || param.type() == "Nesterov")
      << "solver: larc works with type 'SGD' and 'Nesterov', not '" << param.type()
      << "' (the adaptive methods scale each step themselves); remove larc or change type";
}

double LarcRate(const SolverParameter& param, double rate, double weight_norm, double gradient_norm,
                double decay) {
  if (weight_norm <= 0 || gradient_norm <= 0) return rate;
  const double local = param.larc_eta() * weight_norm / (gradient_norm + decay * weight_norm);
  if (param.larc_policy() == "clip") return std::min(local, rate);
  return rate * local;
}

template <typename Dtype>
std::vector<bool> LarcParams(const SolverParameter& param, const Net<Dtype>& net) {
  const auto& learnable = net.learnable_params();
  std::vector<bool> applies(learnable.size(), param.larc());
  if (!param.larc() || param.larc_include_bias_bn()) return applies;
  for (std::size_t i = 0; i < learnable.size(); ++i) {
    const int layer = net.param_layer_indices()[net.learnable_param_ids()[i]].first;
    const bool normalization = LayerTypeTraits(net.layers()[layer]->type()).normalization;
    if (learnable[i]->num_axes() == 1 || normalization) applies[i] = false;
  }
  return applies;
}

template std::vector<bool> LarcParams<float>(const SolverParameter&, const Net<float>&);
template std::vector<bool> LarcParams<double>(const SolverParameter&, const Net<double>&);

}  // namespace doppio
