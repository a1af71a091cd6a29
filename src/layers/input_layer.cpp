#include "doppio/layers/input_layer.hpp"

#include <climits>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void InputLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const InputParameter& param = this->layer_param_.input_param();
  const int num_top = static_cast<int>(top.size());
  const int num_shape = param.shape_size();
  DOPPIO_ENSURE(num_shape == 0 || num_shape == 1 || num_shape == num_top)
      << this->Describe() << " has " << num_shape << " input_param.shape entries for " << num_top
      << " top(s); give one shape for all tops or one per top";
  if (num_shape == 0) return;
  for (int t = 0; t < num_top; ++t) {
    const int s = num_shape == 1 ? 0 : t;
    const BlobShape& shape = param.shape(s);
    std::vector<int> dims;
    for (int d = 0; d < shape.dim_size(); ++d) {
      DOPPIO_ENSURE(shape.dim(d) > 0 && shape.dim(d) <= INT_MAX)
          << this->Describe() << ": input_param.shape[" << s << "] dimension " << d << " is "
          << shape.dim(d) << "; dimensions must be in [1, " << INT_MAX << "]";
      dims.push_back(static_cast<int>(shape.dim(d)));
    }
    try {
      top[t]->Reshape(dims);
    } catch (const Error& e) {  // e.g. a count beyond INT_MAX
      DOPPIO_FAIL() << this->Describe() << ", top " << t << ": " << e.what();
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(InputLayer);
REGISTER_LAYER_CLASS(Input);

}  // namespace doppio
