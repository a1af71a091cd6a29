#pragma once

#include <memory>
#include <vector>

#include "doppio/core/layer.hpp"
#include "doppio/util/hdf5.hpp"

namespace doppio {

// Caffe's HDF5Output: writes its two bottoms to the HDF5 file hdf5_output_param.file_name,
// as the datasets "data" and "label". The file is created (emptied) at set-up; every Forward
// appends its batch along the first axis and flushes, so the file holds every batch seen
// (Caffe's layer could write one batch only: its second Forward failed on the existing
// dataset). No tops; backward does nothing.
template <typename Dtype>
class HDF5OutputLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit HDF5OutputLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  const char* type() const override { return "HDF5Output"; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override {}

  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 0; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {}

 private:
  std::unique_ptr<Hdf5Writer> file_;
};

}  // namespace doppio
