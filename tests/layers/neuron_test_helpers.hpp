#pragma once

// Helpers shared by the neuron-layer tests: building blobs from values, catching an Error's
// message, and checking that a layer gives the same results in place as out of place.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "doppio/core/layer_registry.hpp"
#include "test_util.hpp"

namespace doppio {

// Runs a layer (made through the registry, so its registration is checked too) out of place
// and, as a fresh instance, in place on the same input and top gradient, and requires equal
// outputs, bottom gradients and parameter gradients. Both instances are seeded alike, so
// random layers draw the same numbers. `zeros` puts exact zeros at every 7th input (the kink
// of ReLU-like layers).
template <typename Dtype>
void ExpectInPlaceMatches(const LayerParameter& param, const std::vector<int>& shape, double low,
                          double high, bool zeros = false, std::uint64_t seed = 1234) {
  Rng rng(seed);
  Blob<Dtype> input(shape);
  FillUniform<Dtype>(&input, rng, Dtype(low), Dtype(high));
  if (zeros) {
    for (int i = 0; i < input.count(); i += 7) input.mutable_cpu_data()[i] = 0;
  }
  Blob<Dtype> top_grad(shape);
  FillGaussian<Dtype>(&top_grad, rng);

  auto reference = LayerRegistry<Dtype>::CreateLayer(param);
  auto in_place = LayerRegistry<Dtype>::CreateLayer(param);
  ASSERT_EQ(param.type(), reference->type());

  Blob<Dtype> bottom(shape);
  Blob<Dtype> top;
  bottom.CopyFrom(input);
  reference->SetUp({&bottom}, {&top});
  Blob<Dtype> blob(shape);
  blob.CopyFrom(input);
  in_place->SetUp({&blob}, {&blob});
  ASSERT_EQ(blob.shape(), shape);

  // Two rounds, so state left by one pass (kept copies, masks) cannot mask an error.
  for (int round = 0; round < 2; ++round) {
    if (round == 1) {
      FillUniform<Dtype>(&input, rng, Dtype(low), Dtype(high));
      bottom.CopyFrom(input);
      blob.CopyFrom(input);
    }
    for (auto* layer : {reference.get(), in_place.get()}) {
      for (auto& p : layer->blobs()) cpu_set(p->count(), Dtype(0), p->mutable_cpu_diff());
      layer->set_seed(seed + round);
    }
    reference->Forward({&bottom}, {&top});
    in_place->Forward({&blob}, {&blob});
    for (int i = 0; i < top.count(); ++i) {
      ASSERT_EQ(top.cpu_data()[i], blob.cpu_data()[i]) << "forward element " << i;
    }
    cpu_copy(top.count(), top_grad.cpu_data(), top.mutable_cpu_diff());
    cpu_copy(blob.count(), top_grad.cpu_data(), blob.mutable_cpu_diff());
    reference->Backward({&top}, {true}, {&bottom});
    in_place->Backward({&blob}, {true}, {&blob});
    for (int i = 0; i < bottom.count(); ++i) {
      ASSERT_EQ(bottom.cpu_diff()[i], blob.cpu_diff()[i]) << "backward element " << i;
    }
    ASSERT_EQ(reference->blobs().size(), in_place->blobs().size());
    for (std::size_t b = 0; b < reference->blobs().size(); ++b) {
      const Blob<Dtype>& p = *reference->blobs()[b];
      const Blob<Dtype>& q = *in_place->blobs()[b];
      for (int i = 0; i < p.count(); ++i) {
        ASSERT_EQ(p.cpu_data()[i], q.cpu_data()[i]) << "parameter " << b << " element " << i;
        EXPECT_NEAR(p.cpu_diff()[i], q.cpu_diff()[i],
                    1e-5 * std::max<Dtype>(1, std::fabs(p.cpu_diff()[i])))
            << "parameter gradient " << b << " element " << i;
      }
    }
  }
}

}  // namespace doppio
