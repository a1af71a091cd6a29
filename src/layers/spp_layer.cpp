#include "doppio/layers/spp_layer.hpp"

#include "doppio/core/layer_registry.hpp"

namespace doppio {

namespace {
template <typename Dtype>
std::vector<Blob<Dtype>*> Pointers(const std::vector<std::unique_ptr<Blob<Dtype>>>& blobs) {
  std::vector<Blob<Dtype>*> result;
  for (const auto& blob : blobs) result.push_back(blob.get());
  return result;
}
}  // namespace

template <typename Dtype>
LayerParameter SPPLayer<Dtype>::LevelPooling(int level, int height, int width) const {
  const SPPParameter& spp = this->layer_param_.spp_param();
  const int bins = 1 << level;
  LayerParameter param;
  param.set_name(this->layer_param_.name() + "_level" + std::to_string(level));
  param.set_type("Pooling");
  param.set_phase(this->layer_param_.phase());
  PoolingParameter* pooling = param.mutable_pooling_param();
  // The smallest kernel that covers the input in `bins` strides, and the padding (split
  // between the two sides, the odd pixel at the end) that makes up the rest.
  const int kernel_h = (height + bins - 1) / bins;
  const int kernel_w = (width + bins - 1) / bins;
  const int pad_h = (kernel_h * bins - height + 1) / 2;
  const int pad_w = (kernel_w * bins - width + 1) / 2;
  DOPPIO_ENSURE(pad_h < kernel_h && pad_w < kernel_w)
      << this->Describe() << ": spp_param.pyramid_height " << pyramid_height_
      << " is too high for a " << height << "x" << width << " input: level " << level
      << " would pool " << bins << "x" << bins << " bins of " << kernel_h << "x" << kernel_w
      << " with padding " << pad_h << "x" << pad_w << " (the padding must be smaller)";
  DOPPIO_ENSURE(spp.pool() != SPPParameter::STOCHASTIC || (pad_h == 0 && pad_w == 0))
      << this->Describe() << ": spp_param.pool STOCHASTIC needs each level's bins to tile the "
      << height << "x" << width << " input exactly; level " << level << " needs padding " << pad_h
      << "x" << pad_w;
  pooling->set_kernel_h(kernel_h);
  pooling->set_kernel_w(kernel_w);
  pooling->set_stride_h(kernel_h);
  pooling->set_stride_w(kernel_w);
  pooling->set_pad_h(pad_h);
  pooling->set_pad_w(pad_w);
  switch (spp.pool()) {
    case SPPParameter::MAX:
      pooling->set_pool(PoolingParameter::MAX);
      break;
    case SPPParameter::AVE:
      pooling->set_pool(PoolingParameter::AVE);
      break;
    case SPPParameter::STOCHASTIC:
      pooling->set_pool(PoolingParameter::STOCHASTIC);
      break;
  }
  return param;
}

template <typename Dtype>
void SPPLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const SPPParameter& spp = this->layer_param_.spp_param();
  DOPPIO_ENSURE(spp.pyramid_height() > 0 && spp.pyramid_height() <= 16)
      << this->Describe() << ": spp_param.pyramid_height must be in [1, 16], got "
      << spp.pyramid_height();
  pyramid_height_ = static_cast<int>(spp.pyramid_height());
  height_ = width_ = 0;  // Reshape builds the pooling layers for the input's size
  pooling_.assign(pyramid_height_, nullptr);
  flatten_.clear();
  split_tops_.clear();
  pooled_.clear();
  flat_.clear();
  if (pyramid_height_ == 1) return;  // one Pooling layer from the bottom to the top
  const auto inner = [this](const std::string& suffix, const std::string& type) {
    LayerParameter param;
    param.set_name(this->layer_param_.name() + "_" + suffix);
    param.set_type(type);
    return LayerRegistry<Dtype>::CreateLayer(param);
  };
  split_ = inner("split", "Split");
  for (int level = 0; level < pyramid_height_; ++level) {
    flatten_.push_back(inner("flatten" + std::to_string(level), "Flatten"));
    split_tops_.push_back(std::make_unique<Blob<Dtype>>());
    pooled_.push_back(std::make_unique<Blob<Dtype>>());
    flat_.push_back(std::make_unique<Blob<Dtype>>());
  }
  concat_ = inner("concat", "Concat");
}

template <typename Dtype>
void SPPLayer<Dtype>::BuildForSize(const BlobVec& bottom, const BlobVec& top) {
  height_ = bottom[0]->shape(2);
  width_ = bottom[0]->shape(3);
  for (int level = 0; level < pyramid_height_; ++level) {
    pooling_[level] = LayerRegistry<Dtype>::CreateLayer(LevelPooling(level, height_, width_));
    pooling_[level]->set_seed(this->seed() + level);
    pooling_[level]->set_batch_position(this->batch_position_);
  }
  if (pyramid_height_ == 1) {
    pooling_[0]->SetUp(bottom, top);
    return;
  }
  split_->SetUp(bottom, Pointers(split_tops_));
  for (int level = 0; level < pyramid_height_; ++level) {
    pooling_[level]->SetUp({split_tops_[level].get()}, {pooled_[level].get()});
    flatten_[level]->SetUp({pooled_[level].get()}, {flat_[level].get()});
  }
  concat_->SetUp(Pointers(flat_), top);
}

template <typename Dtype>
void SPPLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  DOPPIO_ENSURE(bottom[0]->num_axes() == 4)
      << this->Describe() << ": input must have 4 axes (N, C, H, W), got shape "
      << bottom[0]->shape_string();
  DOPPIO_ENSURE(bottom[0]->shape(2) > 0 && bottom[0]->shape(3) > 0)
      << this->Describe() << ": input " << bottom[0]->shape_string()
      << " has an empty spatial axis";
  // The pooling windows depend on the input's size: new ones when it changed.
  if (bottom[0]->shape(2) != height_ || bottom[0]->shape(3) != width_) {
    BuildForSize(bottom, top);
    return;
  }
  if (pyramid_height_ == 1) {
    pooling_[0]->Reshape(bottom, top);
    return;
  }
  split_->Reshape(bottom, Pointers(split_tops_));
  for (int level = 0; level < pyramid_height_; ++level) {
    pooling_[level]->Reshape({split_tops_[level].get()}, {pooled_[level].get()});
    flatten_[level]->Reshape({pooled_[level].get()}, {flat_[level].get()});
  }
  concat_->Reshape(Pointers(flat_), top);
}

template <typename Dtype>
void SPPLayer<Dtype>::ShareDeviceWithInner() {
  for (auto& layer : pooling_) this->ShareDevice(*layer);
  if (pyramid_height_ == 1) return;
  this->ShareDevice(*split_);
  for (auto& layer : flatten_) this->ShareDevice(*layer);
  this->ShareDevice(*concat_);
}

template <typename Dtype>
void SPPLayer<Dtype>::RunForward(const BlobVec& bottom, const BlobVec& top) {
  ShareDeviceWithInner();
  if (pyramid_height_ == 1) {
    pooling_[0]->Forward(bottom, top);
    return;
  }
  split_->Forward(bottom, Pointers(split_tops_));
  for (int level = 0; level < pyramid_height_; ++level) {
    pooling_[level]->Forward({split_tops_[level].get()}, {pooled_[level].get()});
    flatten_[level]->Forward({pooled_[level].get()}, {flat_[level].get()});
  }
  concat_->Forward(Pointers(flat_), top);
}

template <typename Dtype>
void SPPLayer<Dtype>::RunBackward(const BlobVec& top, const std::vector<bool>& propagate_down,
                                  const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  ShareDeviceWithInner();
  if (pyramid_height_ == 1) {
    pooling_[0]->Backward(top, propagate_down, bottom);
    return;
  }
  concat_->Backward(top, std::vector<bool>(pyramid_height_, true), Pointers(flat_));
  for (int level = 0; level < pyramid_height_; ++level) {
    flatten_[level]->Backward({flat_[level].get()}, {true}, {pooled_[level].get()});
    pooling_[level]->Backward({pooled_[level].get()}, {true}, {split_tops_[level].get()});
  }
  split_->Backward(Pointers(split_tops_), {true}, bottom);
}

DOPPIO_INSTANTIATE_CLASS(SPPLayer);
REGISTER_LAYER_CLASS(SPP);

}  // namespace doppio
