#include "doppio/layers/accuracy_layer.hpp"

#include <gtest/gtest.h>

#include <string>

#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class AccuracyLayerTest : public ::testing::Test {
 protected:
  // Four samples over three classes:
  //   scores          label  rank of label
  //   (0.1 0.7 0.2)   1      1st
  //   (0.5 0.3 0.2)   2      3rd
  //   (0.2 0.3 0.5)   1      2nd
  //   (0.6 0.1 0.3)   0      1st
  void FillCase() {
    scores_.Reshape({4, 3});
    const Dtype s[] = {0.1, 0.7, 0.2, 0.5, 0.3, 0.2, 0.2, 0.3, 0.5, 0.6, 0.1, 0.3};
    std::copy(s, s + 12, scores_.mutable_cpu_data());
    labels_.Reshape({4});
    const Dtype l[] = {1, 2, 1, 0};
    std::copy(l, l + 4, labels_.mutable_cpu_data());
  }

  Dtype Run(const std::string& accuracy_param) {
    AccuracyLayer<Dtype> layer(ParseText<LayerParameter>(
        "name: 'acc' type: 'Accuracy' accuracy_param { " + accuracy_param + " }"));
    layer.SetUp(bottom_vec_, top_vec_);
    layer.Forward(bottom_vec_, top_vec_);
    return accuracy_.cpu_data()[0];
  }

  Blob<Dtype> scores_;
  Blob<Dtype> labels_;
  Blob<Dtype> accuracy_;
  Blob<Dtype> per_class_;
  std::vector<Blob<Dtype>*> bottom_vec_{&scores_, &labels_};
  std::vector<Blob<Dtype>*> top_vec_{&accuracy_};
};
TYPED_TEST_SUITE(AccuracyLayerTest, TestDtypes);

TYPED_TEST(AccuracyLayerTest, TopOneAndTopTwo) {
  this->FillCase();
  EXPECT_NEAR(this->Run(""), 0.5, 1e-7);           // samples 0 and 3
  EXPECT_NEAR(this->Run("top_k: 2"), 0.75, 1e-7);  // plus sample 2
  EXPECT_NEAR(this->Run("top_k: 3"), 1.0, 1e-7);
  EXPECT_EQ(this->accuracy_.num_axes(), 0);
}

TYPED_TEST(AccuracyLayerTest, PerClassWithIgnoreLabel) {
  this->FillCase();
  this->top_vec_.push_back(&this->per_class_);
  // Ignoring label 0 leaves samples 0, 1, 2: one of three correct at top 1.
  EXPECT_NEAR(this->Run("ignore_label: 0"), 1.0 / 3, 1e-7);
  ASSERT_EQ(this->per_class_.shape(), std::vector<int>{3});
  EXPECT_NEAR(this->per_class_.cpu_data()[0], 0.0, 1e-7);  // no samples counted
  EXPECT_NEAR(this->per_class_.cpu_data()[1], 0.5, 1e-7);  // samples 0 (right), 2 (wrong)
  EXPECT_NEAR(this->per_class_.cpu_data()[2], 0.0, 1e-7);  // sample 1 (wrong)
  // Without ignoring: class 0 has sample 3, right.
  EXPECT_NEAR(this->Run(""), 0.5, 1e-7);
  EXPECT_NEAR(this->per_class_.cpu_data()[0], 1.0, 1e-7);
  EXPECT_NEAR(this->per_class_.cpu_data()[1], 0.5, 1e-7);
  EXPECT_NEAR(this->per_class_.cpu_data()[2], 0.0, 1e-7);
  // Top 2: sample 2 now counts for class 1.
  EXPECT_NEAR(this->Run("top_k: 2"), 0.75, 1e-7);
  EXPECT_NEAR(this->per_class_.cpu_data()[1], 1.0, 1e-7);
}

TYPED_TEST(AccuracyLayerTest, TiesCountAgainstTheLabel) {
  // Scores (1, 1, 0) with label 0: class 1 scores as high, so label 0 is not in the top 1;
  // it is in the top 2. Label 2 is behind two classes: only in the top 3.
  this->scores_.Reshape({2, 3});
  const TypeParam s[] = {1, 1, 0, 1, 1, 0};
  std::copy(s, s + 6, this->scores_.mutable_cpu_data());
  this->labels_.Reshape({2});
  this->labels_.mutable_cpu_data()[0] = 0;
  this->labels_.mutable_cpu_data()[1] = 2;
  EXPECT_NEAR(this->Run(""), 0.0, 1e-7);
  EXPECT_NEAR(this->Run("top_k: 2"), 0.5, 1e-7);
  EXPECT_NEAR(this->Run("top_k: 3"), 1.0, 1e-7);
}

TYPED_TEST(AccuracyLayerTest, SpatialLabelsOverAxis) {
  // Shape {1, 3, 2}: class scores at position 0 are (1, 5, 2), at position 1 (4, 0, 3).
  this->scores_.Reshape({1, 3, 2});
  const TypeParam s[] = {1, 4, 5, 0, 2, 3};
  std::copy(s, s + 6, this->scores_.mutable_cpu_data());
  this->labels_.Reshape({1, 2});
  this->labels_.mutable_cpu_data()[0] = 1;  // right
  this->labels_.mutable_cpu_data()[1] = 2;  // second
  EXPECT_NEAR(this->Run(""), 0.5, 1e-7);
  EXPECT_NEAR(this->Run("top_k: 2"), 1.0, 1e-7);
  // The same data with the class axis last: shape {2, 3} transposed.
  this->scores_.Reshape({1, 2, 3});
  const TypeParam t[] = {1, 5, 2, 4, 0, 3};
  std::copy(t, t + 6, this->scores_.mutable_cpu_data());
  EXPECT_NEAR(this->Run("axis: -1"), 0.5, 1e-7);
  EXPECT_NEAR(this->Run("axis: 2 top_k: 2"), 1.0, 1e-7);
}

TYPED_TEST(AccuracyLayerTest, NoBackward) {
  this->FillCase();
  AccuracyLayer<TypeParam> layer(ParseText<LayerParameter>("name: 'acc1' type: 'Accuracy'"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  layer.Forward(this->bottom_vec_, this->top_vec_);
  EXPECT_FALSE(layer.AllowForceBackward(0));
  layer.Backward(this->top_vec_, {false, false}, this->bottom_vec_);  // nothing asked: fine
  ExpectError(
      [&] {
        layer.Backward(this->top_vec_, {true, false}, this->bottom_vec_);
      },
      {"layer 'acc1' (Accuracy)", "backward"});
}

TYPED_TEST(AccuracyLayerTest, BadInputs) {
  this->FillCase();
  AccuracyLayer<TypeParam> too_many(
      ParseText<LayerParameter>("name: 'acc1' type: 'Accuracy' accuracy_param { top_k: 4 }"));
  ExpectError([&] { too_many.SetUp(this->bottom_vec_, this->top_vec_); },
              {"layer 'acc1'", "top_k"});
  this->labels_.Reshape({3});
  AccuracyLayer<TypeParam> mismatch(ParseText<LayerParameter>("name: 'acc1' type: 'Accuracy'"));
  ExpectError([&] { mismatch.SetUp(this->bottom_vec_, this->top_vec_); },
              {"layer 'acc1'", "number of labels"});
  this->FillCase();
  this->labels_.mutable_cpu_data()[1] = 3;
  AccuracyLayer<TypeParam> range(ParseText<LayerParameter>("name: 'acc1' type: 'Accuracy'"));
  range.SetUp(this->bottom_vec_, this->top_vec_);
  ExpectError([&] { range.Forward(this->bottom_vec_, this->top_vec_); },
              {"layer 'acc1'", "label value 3"});
}

}  // namespace doppio
