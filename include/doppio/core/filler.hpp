#pragma once

#include <memory>

#include "doppio/core/blob.hpp"
#include "doppio/util/rng.hpp"

namespace doppio {

// Initialises a blob's data from a FillerParameter: constant, uniform, gaussian (with
// optional sparsity), xavier, msra, positive_unitball or bilinear.
template <typename Dtype>
class Filler {
 public:
  explicit Filler(const FillerParameter& param) : param_(param) {}
  virtual ~Filler() = default;
  virtual void Fill(Blob<Dtype>* blob, Rng& rng) = 0;

 protected:
  FillerParameter param_;
};

// Throws Error naming the type when it is unknown.
template <typename Dtype>
std::unique_ptr<Filler<Dtype>> GetFiller(const FillerParameter& param);

}  // namespace doppio
