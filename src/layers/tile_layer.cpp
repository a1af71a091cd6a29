#include "doppio/layers/tile_layer.hpp"

#include <climits>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void TileLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const TileParameter& param = this->layer_param_.tile_param();
  DOPPIO_ENSURE(param.has_tiles()) << this->Describe() << ": tile_param.tiles is required";
  DOPPIO_ENSURE(param.tiles() >= 1)
      << this->Describe() << ": tile_param.tiles is " << param.tiles() << "; it must be >= 1";
  tiles_ = param.tiles();
}

template <typename Dtype>
void TileLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const TileParameter& param = this->layer_param_.tile_param();
  const int num_axes = bottom[0]->num_axes();
  DOPPIO_ENSURE(param.axis() >= -num_axes && param.axis() < num_axes)
      << this->Describe() << ": tile_param.axis " << param.axis()
      << " is out of range for bottom of shape " << bottom[0]->shape_string();
  axis_ = bottom[0]->CanonicalAxisIndex(param.axis());
  std::vector<int> top_shape = bottom[0]->shape();
  const long long tiled = static_cast<long long>(top_shape[axis_]) * tiles_;
  DOPPIO_ENSURE(tiled * bottom[0]->count(0, axis_) * bottom[0]->count(axis_ + 1) <= INT_MAX)
      << this->Describe() << ": tiling bottom of shape " << bottom[0]->shape_string() << " "
      << tiles_ << " times is too large";
  top_shape[axis_] = static_cast<int>(tiled);
  top[0]->Reshape(top_shape);
  outer_dim_ = bottom[0]->count(0, axis_);
  inner_dim_ = bottom[0]->count(axis_);
}

template <typename Dtype>
void TileLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (top[0]->count() == 0) return;
  const Dtype* bottom_data = bottom[0]->cpu_data();
  Dtype* top_data = top[0]->mutable_cpu_data();
  for (int i = 0; i < outer_dim_; ++i) {
    for (int t = 0; t < tiles_; ++t) {
      cpu_copy(inner_dim_, bottom_data, top_data);
      top_data += inner_dim_;
    }
    bottom_data += inner_dim_;
  }
}

template <typename Dtype>
void TileLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (!propagate_down[0] || bottom[0]->count() == 0) return;
  const Dtype* top_diff = top[0]->cpu_diff();
  Dtype* bottom_diff = bottom[0]->mutable_cpu_diff();
  for (int i = 0; i < outer_dim_; ++i) {
    cpu_copy(inner_dim_, top_diff, bottom_diff);
    top_diff += inner_dim_;
    for (int t = 1; t < tiles_; ++t) {
      cpu_axpy(inner_dim_, Dtype(1), top_diff, bottom_diff);
      top_diff += inner_dim_;
    }
    bottom_diff += inner_dim_;
  }
}

DOPPIO_INSTANTIATE_CLASS(TileLayer);
REGISTER_LAYER_CLASS(Tile);

}  // namespace doppio
