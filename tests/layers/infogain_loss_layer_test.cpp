#include "doppio/layers/infogain_loss_layer.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "doppio/layers/softmax_loss_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class InfogainLossLayerTest : public ::testing::Test {
 protected:
  void RandomCase(const std::vector<int>& shape, int axis) {
    pred_.Reshape(shape);
    FillGaussian<Dtype>(&pred_, rng_, 0, 2);
    const int classes = shape[axis];
    std::vector<int> label_shape = shape;
    label_shape[axis] = 1;
    labels_.Reshape(label_shape);
    for (int i = 0; i < labels_.count(); ++i) {
      labels_.mutable_cpu_data()[i] = Dtype(rng_.Below(classes));
    }
    H_.Reshape({classes, classes});
    FillUniform<Dtype>(&H_, rng_, 0, 1);
  }
  std::string WriteMatrix(const Blob<Dtype>& H) {
    BlobProto proto;
    H.ToProto(&proto);
    const std::string path = dir_.path() + "/H.binaryproto";
    std::ofstream out(path, std::ios::binary);
    EXPECT_TRUE(proto.SerializeToOstream(&out));
    return path;
  }

  Blob<Dtype> pred_;
  Blob<Dtype> labels_;
  Blob<Dtype> H_;
  Blob<Dtype> loss_;
  Blob<Dtype> prob_;
  std::vector<Blob<Dtype>*> bottom_vec_{&pred_, &labels_, &H_};
  std::vector<Blob<Dtype>*> top_vec_{&loss_};
  Rng rng_{2024};
  TempDir dir_;
};
TYPED_TEST_SUITE(InfogainLossLayerTest, TestDtypes);

TYPED_TEST(InfogainLossLayerTest, ForwardHandComputed) {
  // One sample scoring (1, 2, 3) with label 0 and row 0 of H = (1, 0.5, 0):
  // -(1 log p0 + 0.5 log p1) = 2.40760596 + 0.5 * 1.40760596 = 3.11140894.
  this->pred_.Reshape({1, 3});
  for (int c = 0; c < 3; ++c) this->pred_.mutable_cpu_data()[c] = TypeParam(c + 1);
  this->labels_.Reshape({1});
  this->labels_.mutable_cpu_data()[0] = 0;
  this->H_.Reshape({3, 3});
  const TypeParam H[] = {1, 0.5, 0, 0, 1, 0, 0, 0, 1};
  std::copy(H, H + 9, this->H_.mutable_cpu_data());
  InfogainLossLayer<TypeParam> layer(ParseText<LayerParameter>("name: 'ig' type: 'InfogainLoss'"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  layer.Forward(this->bottom_vec_, this->top_vec_);
  EXPECT_NEAR(this->loss_.cpu_data()[0], 3.11140894, 1e-5);
}

TYPED_TEST(InfogainLossLayerTest, IdentityMatchesSoftmaxLossAndFileMatchesBottom) {
  this->RandomCase({3, 4, 2}, 1);
  std::vector<Blob<TypeParam>*> two{&this->pred_, &this->labels_};
  SoftmaxWithLossLayer<TypeParam> softmax_loss(ParseText<LayerParameter>(
      "name: 'sl' type: 'SoftmaxWithLoss' loss_param { ignore_label: 1 normalization: FULL }"));
  softmax_loss.SetUp(two, this->top_vec_);
  const TypeParam expected = softmax_loss.Forward(two, this->top_vec_);
  cpu_set(16, TypeParam(0), this->H_.mutable_cpu_data());
  for (int c = 0; c < 4; ++c) this->H_.mutable_cpu_data()[c * 5] = 1;
  InfogainLossLayer<TypeParam> layer(ParseText<LayerParameter>(
      "name: 'ig' type: 'InfogainLoss' loss_param { ignore_label: 1 normalization: FULL }"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  EXPECT_NEAR(layer.Forward(this->bottom_vec_, this->top_vec_), expected, 1e-5);

  // A random H, once as a bottom and once from a file, with the probabilities as a top.
  FillUniform<TypeParam>(&this->H_, this->rng_, 0, 2);
  const std::string path = this->WriteMatrix(this->H_);
  InfogainLossLayer<TypeParam> from_bottom(
      ParseText<LayerParameter>("name: 'ig' type: 'InfogainLoss'"));
  from_bottom.SetUp(this->bottom_vec_, this->top_vec_);
  const TypeParam loss_bottom = from_bottom.Forward(this->bottom_vec_, this->top_vec_);
  std::vector<Blob<TypeParam>*> tops{&this->loss_, &this->prob_};
  InfogainLossLayer<TypeParam> from_file(ParseText<LayerParameter>(
      "name: 'ig' type: 'InfogainLoss' infogain_loss_param { source: '" + path + "' }"));
  from_file.SetUp(two, tops);
  EXPECT_NEAR(from_file.Forward(two, tops), loss_bottom, 1e-5);
  ASSERT_EQ(this->prob_.shape(), this->pred_.shape());
  for (int i = 0; i < 6; ++i) {  // each (n, position) sums to 1 over the 4 classes
    const int n = i / 2, k = i % 2;
    double sum = 0;
    for (int c = 0; c < 4; ++c) sum += this->prob_.cpu_data()[(n * 4 + c) * 2 + k];
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
}

TYPED_TEST(InfogainLossLayerTest, Gradient) {
  this->RandomCase({2, 4, 3}, 1);
  InfogainLossLayer<TypeParam> layer(ParseText<LayerParameter>("name: 'ig' type: 'InfogainLoss'"));
  EXPECT_TRUE(layer.AllowForceBackward(0));
  EXPECT_FALSE(layer.AllowForceBackward(1));
  EXPECT_FALSE(layer.AllowForceBackward(2));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_, 0);
}

TYPED_TEST(InfogainLossLayerTest, GradientIgnoreLabelNormalizationAxis) {
  for (const char* mode : {"FULL", "VALID", "BATCH_SIZE", "NONE"}) {
    SCOPED_TRACE(mode);
    this->RandomCase({2, 3, 4}, 2);
    this->labels_.mutable_cpu_data()[1] = 3;
    InfogainLossLayer<TypeParam> layer(ParseText<LayerParameter>(
        std::string("name: 'ig' type: 'InfogainLoss' loss_weight: 1.5 infogain_loss_param { "
                    "axis: -1 } loss_param { ignore_label: 3 normalization: ") +
        mode + " }"));
    GradientChecker<TypeParam> checker(1e-2, 1e-3);
    checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_, 0);
  }
}

TYPED_TEST(InfogainLossLayerTest, GradientWithMatrixFromFile) {
  this->RandomCase({3, 3}, 1);
  const std::string path = this->WriteMatrix(this->H_);
  std::vector<Blob<TypeParam>*> two{&this->pred_, &this->labels_};
  InfogainLossLayer<TypeParam> layer(ParseText<LayerParameter>(
      "name: 'ig' type: 'InfogainLoss' infogain_loss_param { source: '" + path + "' }"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, two, this->top_vec_, 0);
}

TYPED_TEST(InfogainLossLayerTest, BadInputs) {
  this->RandomCase({2, 3}, 1);
  std::vector<Blob<TypeParam>*> two{&this->pred_, &this->labels_};
  const std::string missing = this->dir_.path() + "/missing.binaryproto";
  InfogainLossLayer<TypeParam> no_file(ParseText<LayerParameter>(
      "name: 'info' type: 'InfogainLoss' infogain_loss_param { source: '" + missing + "' }"));
  ExpectError([&] { no_file.SetUp(two, this->top_vec_); },
              {"layer 'info' (InfogainLoss)", missing});
  {
    std::ofstream junk(this->dir_.path() + "/junk", std::ios::binary);
    junk << "\xff\xff\xff not a proto";
  }
  InfogainLossLayer<TypeParam> bad_file(ParseText<LayerParameter>(
      "name: 'info' type: 'InfogainLoss' infogain_loss_param { source: '" + this->dir_.path() +
      "/junk' }"));
  ExpectError([&] { bad_file.SetUp(two, this->top_vec_); }, {"layer 'info'", "junk"});
  InfogainLossLayer<TypeParam> no_source(
      ParseText<LayerParameter>("name: 'info' type: 'InfogainLoss'"));
  ExpectError([&] { no_source.SetUp(two, this->top_vec_); },
              {"layer 'info'", "infogain_loss_param.source"});
  this->H_.Reshape({2, 2});
  InfogainLossLayer<TypeParam> small_h(
      ParseText<LayerParameter>("name: 'info' type: 'InfogainLoss'"));
  ExpectError([&] { small_h.SetUp(this->bottom_vec_, this->top_vec_); },
              {"layer 'info'", "infogain matrix"});
  this->H_.Reshape({3, 3});
  this->labels_.mutable_cpu_data()[0] = 5;
  InfogainLossLayer<TypeParam> range(
      ParseText<LayerParameter>("name: 'info' type: 'InfogainLoss'"));
  range.SetUp(this->bottom_vec_, this->top_vec_);
  ExpectError([&] { range.Forward(this->bottom_vec_, this->top_vec_); },
              {"layer 'info'", "label value 5"});
  this->labels_.Reshape({3});
  InfogainLossLayer<TypeParam> count(
      ParseText<LayerParameter>("name: 'info' type: 'InfogainLoss'"));
  ExpectError([&] { count.SetUp(this->bottom_vec_, this->top_vec_); }, {"layer 'info'"});
}

TYPED_TEST(InfogainLossLayerTest, NoGradientToMatrix) {
  this->RandomCase({2, 3}, 1);
  InfogainLossLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'info' type: 'InfogainLoss'"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  layer.Forward(this->bottom_vec_, this->top_vec_);
  ExpectError(
      [&] {
        layer.Backward(this->top_vec_, {true, false, true}, this->bottom_vec_);
      },
      {"layer 'info'", "infogain matrix"});
}

}  // namespace doppio
