#pragma once

#include <vector>

#include "doppio/core/gpu_storage.hpp"
#include "doppio/layers/neuron_layer.hpp"

namespace doppio {

// In TRAIN, zeroes each unit with probability dropout_ratio. Each sample's mask is a
// function of the layer's seed and the sample's position in the stream of training samples
// (Layer::batch_position, philox.hpp): a sample is masked alike on any number of ranks and on
// the CPU and the GPU, and a resumed run draws the masks the uninterrupted run drew. With
// scale_train (the default) kept units are scaled by 1/(1 - ratio)
// in TRAIN and TEST is the identity; without it TRAIN keeps units unscaled and TEST scales
// everything by (1 - ratio). Either way the expected output is the same in both phases.
template <typename Dtype>
class DropoutLayer : public NeuronLayer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit DropoutLayer(const LayerParameter& param) : NeuronLayer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "Dropout"; }
  // On the GPU under BF16 and FP16, in 16 bits.
  LayerPrecision precision() const override { return StoragePrecision(GpuStorageOf(*this)); }

  // The mask of the last TRAIN Forward: 1 for a kept unit, 0 for a dropped one.
  const std::vector<unsigned int>& mask() const { return mask_; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

 private:
  // The Philox key of the masks.
  std::uint64_t MaskSeed() const;

  Dtype ratio_ = 0.5;
  bool scale_train_ = true;
  // Factor on kept units in TRAIN, and on every unit in TEST.
  Dtype train_scale_ = 1;
  Dtype test_scale_ = 1;
  std::vector<unsigned int> mask_;
#ifdef DOPPIO_WITH_CUDA
  std::shared_ptr<SyncedMemory> mask_gpu_;  // the device mask of the last TRAIN Forward_gpu
  GpuStorageReader input_reader_;
  GpuStorageReader diff_reader_;
#endif
};

}  // namespace doppio
