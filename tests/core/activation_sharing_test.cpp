#include "doppio/core/activation_sharing.hpp"

#include <gtest/gtest.h>

#include "doppio/util/io.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// Conv -> ReLU in place -> pool -> conv -> ReLU in place -> flatten (aliases its bottom) ->
// inner product -> softmax.
const char* kChain = R"(
  name: "chain"
  state { phase: TEST }
  layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 dim: 9 dim: 9 } } }
  layer { name: "conv1" type: "Convolution" bottom: "x" top: "c1"
          convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "relu1" type: "ReLU" bottom: "c1" top: "c1" }
  layer { name: "pool1" type: "Pooling" bottom: "c1" top: "p1"
          pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
  layer { name: "conv2" type: "Convolution" bottom: "p1" top: "c2"
          convolution_param { num_output: 5 kernel_size: 3 pad: 1 weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "relu2" type: "ReLU" bottom: "c2" top: "c2" }
  layer { name: "flat" type: "Flatten" bottom: "c2" top: "f" }
  layer { name: "ip" type: "InnerProduct" bottom: "f" top: "y"
          inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "prob" type: "Softmax" bottom: "y" top: "prob" }
)";

// A blob read by three layers (Split), two branches joined by Concat and Eltwise, and two
// outputs of different depth.
const char* kBranches = R"(
  name: "branches"
  state { phase: TEST }
  layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 3 dim: 6 } } }
  layer { name: "ip0" type: "InnerProduct" bottom: "x" top: "h"
          inner_product_param { num_output: 8 weight_filler { type: "gaussian" std: 0.5 } } }
  layer { name: "a" type: "InnerProduct" bottom: "h" top: "a"
          inner_product_param { num_output: 8 weight_filler { type: "gaussian" std: 0.5 } } }
  layer { name: "b" type: "TanH" bottom: "h" top: "b" }
  layer { name: "sum" type: "Eltwise" bottom: "a" bottom: "b" top: "s" }
  layer { name: "cat" type: "Concat" bottom: "s" bottom: "h" top: "cat" concat_param { axis: 1 } }
  layer { name: "sig" type: "Sigmoid" bottom: "cat" top: "cat" }
  layer { name: "out1" type: "InnerProduct" bottom: "cat" top: "out1"
          inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.5 } } }
  layer { name: "mid" type: "InnerProduct" bottom: "s" top: "mid"
          inner_product_param { num_output: 5 weight_filler { type: "gaussian" std: 0.5 } } }
  layer { name: "mid_relu" type: "ReLU" bottom: "mid" top: "mid" }
  layer { name: "out2" type: "InnerProduct" bottom: "mid" top: "out2"
          inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.5 } } }
)";

// As kChain, with channel counts that fill the oneDNN engine's channel blocks (8 or 16), so
// that where ONEDNN runs the layers an activation could stay in a blocked layout.
const char* kWideChain = R"(
  name: "wide_chain"
  state { phase: TEST }
  layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 2 dim: 16 dim: 10 dim: 10 } } }
  layer { name: "conv1" type: "Convolution" bottom: "x" top: "c1"
          convolution_param { num_output: 32 kernel_size: 3 pad: 1 weight_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "relu1" type: "ReLU" bottom: "c1" top: "c1" }
  layer { name: "pool1" type: "Pooling" bottom: "c1" top: "p1"
          pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
  layer { name: "conv2" type: "Convolution" bottom: "p1" top: "c2"
          convolution_param { num_output: 16 kernel_size: 3 pad: 1 weight_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "relu2" type: "ReLU" bottom: "c2" top: "c2" }
  layer { name: "conv3" type: "Convolution" bottom: "c2" top: "c3"
          convolution_param { num_output: 16 kernel_size: 1 weight_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "ip" type: "InnerProduct" bottom: "c3" top: "y"
          inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "prob" type: "Softmax" bottom: "y" top: "prob" }
)";

template <typename Dtype>
class ActivationSharingTest : public ::testing::Test {
 protected:
  // Runs the net twice (two inputs, so stale values would show) with and without sharing
  // and compares every output and every kept blob exactly.
  void ExpectSameOutputs(const char* text, const std::vector<std::string>& keep,
                         std::size_t* saved) {
    const NetParameter param = ReadNetParamsFromTextString(text, "test net");
    Net<Dtype> plain(param, 5), shared(param, 5);
    *saved = ShareActivationMemory(&shared, keep);
    EXPECT_LT(shared.activation_bytes(), plain.activation_bytes());
    EXPECT_EQ(plain.activation_bytes() - shared.activation_bytes(), *saved);
    for (std::uint64_t seed : {11u, 12u}) {
      Rng rng_plain(seed), rng_shared(seed);
      FillGaussian(plain.blob_by_name("x").get(), rng_plain);
      FillGaussian(shared.blob_by_name("x").get(), rng_shared);
      plain.Forward();
      shared.Forward();
      std::vector<std::string> compared = keep;
      for (int id : plain.output_blob_indices()) compared.push_back(plain.blob_names()[id]);
      for (const std::string& name : compared) {
        const Blob<Dtype>& expected = *plain.blob_by_name(name);
        const Blob<Dtype>& actual = *shared.blob_by_name(name);
        ASSERT_EQ(expected.shape(), actual.shape()) << name;
        for (int i = 0; i < expected.count(); ++i) {
          ASSERT_EQ(expected.cpu_data()[i], actual.cpu_data()[i]) << name << "[" << i << "]";
        }
      }
    }
  }
};
TYPED_TEST_SUITE(ActivationSharingTest, TestDtypes);

TYPED_TEST(ActivationSharingTest, ChainWithInPlaceLayersAndAliases) {
  std::size_t saved = 0;
  this->ExpectSameOutputs(kChain, {}, &saved);
  EXPECT_GT(saved, 0u);
}

TYPED_TEST(ActivationSharingTest, SplitsConcatAndSeveralOutputs) {
  std::size_t saved = 0;
  this->ExpectSameOutputs(kBranches, {}, &saved);
  EXPECT_GT(saved, 0u);
}

TYPED_TEST(ActivationSharingTest, ActivationsTheDefaultEngineMayBlock) {
  std::size_t saved = 0;
  this->ExpectSameOutputs(kWideChain, {"c2"}, &saved);
  EXPECT_GT(saved, 0u);
}

TYPED_TEST(ActivationSharingTest, KeptBlobsAreNotOverwritten) {
  std::size_t saved_all = 0, saved_keeping = 0;
  this->ExpectSameOutputs(kChain, {}, &saved_all);
  // p1 and f would otherwise be reused by later layers.
  this->ExpectSameOutputs(kChain, {"p1", "f"}, &saved_keeping);
  EXPECT_LT(saved_keeping, saved_all);
}

TYPED_TEST(ActivationSharingTest, UnknownKeptBlobIsAnError) {
  Net<TypeParam> net(ReadNetParamsFromTextString(kChain, "test net"), 5);
  ExpectError([&] { ShareActivationMemory(&net, {"nope"}); }, {"chain", "nope"});
}

}  // namespace
}  // namespace doppio
