// Net::ShareKeptCopies: an in-place Scale after an in-place BatchNorm reads BatchNorm's kept
// normalised output in Backward instead of keeping a copy of its own input. Training must
// not change: the same net with the Scale writing a new top (which keeps nothing and reads
// its bottom) gives the same loss and gradients bit for bit.
#include <gtest/gtest.h>

#include <string>

#include "doppio/core/net.hpp"
#include "doppio/util/io.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// conv -> BatchNorm -> Scale (random scale, bias) -> ReLU -> inner product -> loss, with
// BatchNorm, Scale and ReLU in place on "c", or (kSeparate) the Scale writing "s". The ReLU
// overwrites the Scale's input, so a Scale reading its bottom in Backward would be wrong.
// The Scale runs on CAFFE: on ONEDNN the in-place chain would be fused into one primitive
// (tests/layers/onednn_batch_norm_fusion_test.cpp), which equals the unfused net only to a
// float tolerance, and keeps no copy to share.
std::string BatchNormScaleNet(const std::string& batch_norm_param, bool scale_in_place) {
  const std::string scale_top = scale_in_place ? "c" : "s";
  return R"(
  name: "bn_scale"
  force_backward: true
  state { phase: TRAIN }
  layer { name: "in" type: "Input" top: "x" top: "target"
          input_param { shape { dim: 3 dim: 2 dim: 5 dim: 5 } shape { dim: 3 dim: 2 } } }
  layer { name: "conv" type: "Convolution" bottom: "x" top: "c"
          convolution_param { num_output: 4 kernel_size: 3 pad: 1
                              weight_filler { type: "gaussian" std: 0.5 }
                              bias_filler { type: "gaussian" std: 0.5 } } }
  layer { name: "bn" type: "BatchNorm" bottom: "c" top: "c" )" +
         batch_norm_param + R"( }
  layer { name: "scale" type: "Scale" bottom: "c" top: ")" +
         scale_top + R"("
          scale_param { bias_term: true filler { type: "gaussian" mean: 1 std: 0.5 }
                        bias_filler { type: "gaussian" std: 0.5 } engine: CAFFE } }
  layer { name: "relu" type: "ReLU" bottom: ")" +
         scale_top + R"(" top: ")" + scale_top + R"(" }
  layer { name: "ip" type: "InnerProduct" bottom: ")" +
         scale_top + R"(" top: "y"
          inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.5 } } }
  layer { name: "loss" type: "EuclideanLoss" bottom: "y" bottom: "target" top: "loss" }
)";
}

template <typename Dtype>
class KeptCopiesTest : public ::testing::Test {
 protected:
  // Trains both nets on the same inputs for two iterations (a stale copy would show in the
  // second) and compares loss, every parameter's gradient and the input's gradient exactly.
  void ExpectSameTraining(Net<Dtype>* shared, Net<Dtype>* separate) {
    for (std::uint64_t seed : {21u, 22u}) {
      for (Net<Dtype>* net : {shared, separate}) {
        Rng rng(seed);
        FillGaussian(net->blob_by_name("x").get(), rng);
        FillGaussian(net->blob_by_name("target").get(), rng);
        net->ClearParamDiffs();
      }
      ASSERT_EQ(shared->ForwardBackward(), separate->ForwardBackward());
      const auto& expected = separate->learnable_params();
      const auto& actual = shared->learnable_params();
      ASSERT_EQ(expected.size(), actual.size());
      for (std::size_t p = 0; p < expected.size(); ++p) {
        for (int i = 0; i < expected[p]->count(); ++i) {
          ASSERT_EQ(expected[p]->cpu_diff()[i], actual[p]->cpu_diff()[i])
              << "parameter " << p << " [" << i << "], seed " << seed;
        }
      }
      const Blob<Dtype>& x_separate = *separate->blob_by_name("x");
      const Blob<Dtype>& x_shared = *shared->blob_by_name("x");
      for (int i = 0; i < x_separate.count(); ++i) {
        ASSERT_EQ(x_separate.cpu_diff()[i], x_shared.cpu_diff()[i]) << "x [" << i << "]";
      }
    }
  }
};
TYPED_TEST_SUITE(KeptCopiesTest, TestDtypes);

TYPED_TEST(KeptCopiesTest, InPlaceScaleReadsTheBatchNormCopy) {
  Net<TypeParam> shared(ReadNetParamsFromTextString(BatchNormScaleNet("", true), "net"), 7);
  Net<TypeParam> separate(ReadNetParamsFromTextString(BatchNormScaleNet("", false), "net"), 7);
  EXPECT_EQ(shared.shared_kept_copies(), 1);
  EXPECT_EQ(separate.shared_kept_copies(), 0);
  this->ExpectSameTraining(&shared, &separate);
}

TYPED_TEST(KeptCopiesTest, NoCopyToShareWithStoredStatistics) {
  // With use_global_stats BatchNorm keeps nothing: the Scale keeps its own copy.
  const std::string global = "batch_norm_param { use_global_stats: true }";
  Net<TypeParam> shared(ReadNetParamsFromTextString(BatchNormScaleNet(global, true), "net"), 7);
  Net<TypeParam> separate(ReadNetParamsFromTextString(BatchNormScaleNet(global, false), "net"), 7);
  EXPECT_EQ(shared.shared_kept_copies(), 0);
  this->ExpectSameTraining(&shared, &separate);
}

}  // namespace
}  // namespace doppio
