#include "doppio/layers/batch_reindex_layer.hpp"

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void BatchReindexLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  DOPPIO_ENSURE(bottom[1]->num_axes() == 1)
      << this->Describe() << ": the indices (bottom 1) must be a 1-d blob, got shape "
      << bottom[1]->shape_string();
  DOPPIO_ENSURE(bottom[0]->num_axes() >= 1)
      << this->Describe() << ": bottom 0 needs a batch axis, got a scalar";
  std::vector<int> shape = bottom[0]->shape();
  shape[0] = bottom[1]->shape(0);
  top[0]->Reshape(shape);
}

template <typename Dtype>
std::vector<int> BatchReindexLayer<Dtype>::CheckedIndices(const Blob<Dtype>& indices,
                                                          int num) const {
  const Dtype* values = indices.cpu_data();
  std::vector<int> result(indices.count());
  for (int i = 0; i < indices.count(); ++i) {
    const Dtype value = values[i];
    // The range test comes first so the conversion below is defined (and NaN fails it).
    DOPPIO_ENSURE(value >= Dtype(0) && value < static_cast<Dtype>(num) &&
                  static_cast<Dtype>(static_cast<int>(value)) == value)
        << this->Describe() << ": index " << i << " (bottom 1) is " << value
        << "; indices must be integers in [0, " << num << "), the batch size of bottom 0";
    result[i] = static_cast<int>(value);
  }
  return result;
}

template <typename Dtype>
void BatchReindexLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const std::vector<int> index = CheckedIndices(*bottom[1], bottom[0]->shape(0));
  const int inner = bottom[0]->count(1);
  const Dtype* in = bottom[0]->cpu_data();
  Dtype* out = top[0]->mutable_cpu_data();
  for (std::size_t i = 0; i < index.size(); ++i) {
    cpu_copy(inner, in + static_cast<long long>(index[i]) * inner, out + i * inner);
  }
}

template <typename Dtype>
void BatchReindexLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                            const std::vector<bool>& propagate_down,
                                            const BlobVec& bottom) {
  DOPPIO_ENSURE(!propagate_down[1])
      << this->Describe() << " cannot backpropagate to its indices (bottom 1)";
  if (!propagate_down[0]) return;
  const std::vector<int> index = CheckedIndices(*bottom[1], bottom[0]->shape(0));
  const int inner = bottom[0]->count(1);
  const Dtype* top_diff = top[0]->cpu_diff();
  Dtype* bottom_diff = bottom[0]->mutable_cpu_diff();
  cpu_set(bottom[0]->count(), Dtype(0), bottom_diff);
  for (std::size_t i = 0; i < index.size(); ++i) {
    cpu_axpy(inner, Dtype(1), top_diff + i * inner,
             bottom_diff + static_cast<long long>(index[i]) * inner);
  }
}

DOPPIO_INSTANTIATE_CLASS(BatchReindexLayer);
REGISTER_LAYER_CLASS(BatchReindex);

}  // namespace doppio
