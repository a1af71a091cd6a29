#include "doppio/core/layer.hpp"

#include <glog/logging.h>

#include "doppio/device/gpu_math.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
Layer<Dtype>::Layer(const LayerParameter& param) : layer_param_(param) {
  phase_ = param.phase();
  for (int i = 0; i < param.blobs_size(); ++i) {
    blobs_.push_back(std::make_shared<Blob<Dtype>>());
    blobs_.back()->FromProto(param.blobs(i));
  }
}

std::string DescribeLayer(const LayerParameter& param) {
  return "layer '" + param.name() + "' (" + param.type() + ")";
}

template <typename Dtype>
std::string Layer<Dtype>::Describe() const {
  return DescribeLayer(layer_param_);
}

template <typename Dtype>
void Layer<Dtype>::SeekStream(std::uint64_t position) {
  LOG(FATAL) << Describe() << " reads no records: it has no stream to seek to " << position;
}

template <typename Dtype>
std::uint64_t Layer<Dtype>::FirstSamplePosition(int num) {
  if (batch_position_->known()) return batch_position_->first();
  const std::uint64_t first = own_position_;
  own_position_ += static_cast<std::uint64_t>(num);
  return first;
}

template <typename Dtype>
void Layer<Dtype>::SetUp(const BlobVec& bottom, const BlobVec& top) {
  CheckBlobCounts(bottom, top);
  LayerSetUp(bottom, top);
  Reshape(bottom, top);
  SetLossWeights(top);
}

template <typename Dtype>
void Layer<Dtype>::set_loss(int top_index, Dtype value) {
  if (static_cast<int>(loss_.size()) <= top_index) loss_.resize(top_index + 1, Dtype(0));
  loss_[top_index] = value;
}

template <typename Dtype>
void Layer<Dtype>::set_param_propagate_down(int param_id, bool value) {
  if (static_cast<int>(param_propagate_down_.size()) <= param_id) {
    param_propagate_down_.resize(param_id + 1, true);
  }
  param_propagate_down_[param_id] = value;
}

template <typename Dtype>
void Layer<Dtype>::CheckDevice() const {
#ifdef DOPPIO_WITH_CUDA
  DOPPIO_ENSURE(gpu_ != nullptr) << Describe()
                                 << " is in GPU mode but has no GPU context to run on";
#else
  DOPPIO_FAIL() << Describe()
                << " is in GPU mode, but this build of doppio has no GPU support "
                   "(built with DOPPIO_CUDA=OFF)";
#endif
}

template <typename Dtype>
Dtype Layer<Dtype>::Forward(const BlobVec& bottom, const BlobVec& top) {
  Reshape(bottom, top);
  const bool on_gpu = mode_ == Mode::GPU;
  if (on_gpu) {
    CheckDevice();
#ifdef DOPPIO_WITH_CUDA
    Forward_gpu(bottom, top);
#endif
  } else {
    Forward_cpu(bottom, top);
  }
  Dtype loss = 0;
  for (std::size_t t = 0; t < top.size(); ++t) {
    if (this->loss(t) == Dtype(0)) continue;
    // The top's diff holds its loss weight (set in SetLossWeights), so the weighted loss is
    // a dot product, taken where the top's newest values are.
    const int count = top[t]->count();
#ifdef DOPPIO_WITH_CUDA
    if (on_gpu && top[t]->data()->head() == SyncedMemory::Head::kDevice) {
      loss += gpu_dot(*gpu_, count, top[t]->gpu_data(*gpu_), top[t]->gpu_diff(*gpu_));
      continue;
    }
#endif
    loss += cpu_dot(count, top[t]->cpu_data(), top[t]->cpu_diff());
  }
  return loss;
}

template <typename Dtype>
void Layer<Dtype>::Backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                            const BlobVec& bottom) {
  if (mode_ == Mode::GPU) {
    CheckDevice();
#ifdef DOPPIO_WITH_CUDA
    Backward_gpu(top, propagate_down, bottom);
#endif
    return;
  }
  Backward_cpu(top, propagate_down, bottom);
}

template <typename Dtype>
void Layer<Dtype>::CheckBlobCounts(const BlobVec& bottom, const BlobVec& top) const {
  const int nb = static_cast<int>(bottom.size());
  const int nt = static_cast<int>(top.size());
  if (ExactNumBottomBlobs() >= 0) {
    DOPPIO_ENSURE(ExactNumBottomBlobs() == nb)
        << Describe() << " takes " << ExactNumBottomBlobs() << " bottom blob(s), got " << nb;
  }
  if (MinBottomBlobs() >= 0) {
    DOPPIO_ENSURE(MinBottomBlobs() <= nb)
        << Describe() << " takes at least " << MinBottomBlobs() << " bottom blob(s), got " << nb;
  }
  if (MaxBottomBlobs() >= 0) {
    DOPPIO_ENSURE(MaxBottomBlobs() >= nb)
        << Describe() << " takes at most " << MaxBottomBlobs() << " bottom blob(s), got " << nb;
  }
  if (ExactNumTopBlobs() >= 0) {
    DOPPIO_ENSURE(ExactNumTopBlobs() == nt)
        << Describe() << " produces " << ExactNumTopBlobs() << " top blob(s), got " << nt;
  }
  if (MinTopBlobs() >= 0) {
    DOPPIO_ENSURE(MinTopBlobs() <= nt)
        << Describe() << " produces at least " << MinTopBlobs() << " top blob(s), got " << nt;
  }
  if (MaxTopBlobs() >= 0) {
    DOPPIO_ENSURE(MaxTopBlobs() >= nt)
        << Describe() << " produces at most " << MaxTopBlobs() << " top blob(s), got " << nt;
  }
  if (EqualNumBottomTopBlobs()) {
    DOPPIO_ENSURE(nb == nt) << Describe() << " needs as many tops as bottoms, got " << nb
                            << " bottom(s) and " << nt << " top(s)";
  }
}

template <typename Dtype>
void Layer<Dtype>::SetLossWeights(const BlobVec& top) {
  const int num_weights = layer_param_.loss_weight_size();
  if (num_weights == 0) {
    if (IsLossLayer() && !top.empty()) {
      set_loss(0, Dtype(1));
      cpu_set(top[0]->count(), Dtype(1), top[0]->mutable_cpu_diff());
    }
    return;
  }
  DOPPIO_ENSURE(num_weights == static_cast<int>(top.size()))
      << Describe() << " has " << num_weights << " loss_weight value(s) but " << top.size()
      << " top(s); give one per top";
  for (int t = 0; t < num_weights; ++t) {
    const Dtype weight = layer_param_.loss_weight(t);
    if (weight == Dtype(0)) continue;
    set_loss(t, weight);
    cpu_set(top[t]->count(), weight, top[t]->mutable_cpu_diff());
  }
}

DOPPIO_INSTANTIATE_CLASS(Layer);

}  // namespace doppio
