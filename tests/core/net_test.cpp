#include "doppio/core/net.hpp"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "doppio/util/io.hpp"
#include "test_util.hpp"
#include "write_fault.hpp"

namespace doppio {
namespace {

// Input x (4x3) -> ip1 (2) -> relu in place -> ip2 (1) -> Euclidean loss against target.
const char* kTinyNet = R"(
  name: "tiny"
  state { phase: TRAIN }
  layer { name: "in" type: "Input" top: "x" top: "target"
          input_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 1 } } }
  layer { name: "ip1" type: "InnerProduct" bottom: "x" top: "h"
          inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.5 }
                                bias_filler { type: "constant" value: 0.1 } } }
  layer { name: "relu" type: "ReLU" bottom: "h" top: "h" }
  layer { name: "ip2" type: "InnerProduct" bottom: "h" top: "y"
          inner_product_param { num_output: 1 weight_filler { type: "gaussian" std: 0.5 } } }
  layer { name: "loss" type: "EuclideanLoss" bottom: "y" bottom: "target" top: "loss" }
)";

template <typename Dtype>
void FillInputs(Net<Dtype>& net, std::uint64_t seed) {
  Rng rng(seed);
  for (const char* name : {"x", "target"}) FillGaussian(net.blob_by_name(name).get(), rng);
}

template <typename Dtype>
class NetTest : public ::testing::Test {
 protected:
  NetParameter Parse(const std::string& text) {
    return ReadNetParamsFromTextString(text, "test net");
  }
};
TYPED_TEST_SUITE(NetTest, TestDtypes);

TYPED_TEST(NetTest, BuildsAndComputesLoss) {
  Net<TypeParam> net(this->Parse(kTinyNet));
  EXPECT_EQ(net.layers().size(), 5u);
  // ip1 weight and bias, ip2 weight and bias.
  EXPECT_EQ(net.learnable_params().size(), 4u);
  EXPECT_EQ(net.arena_count(), 3u * 2 + 2 + 2 + 1);
  FillInputs(net, 3);
  TypeParam loss = 0;
  net.Forward(&loss);
  // Recompute the Euclidean loss by hand from the output blob.
  const auto y = net.blob_by_name("y");
  const auto t = net.blob_by_name("target");
  TypeParam expected = 0;
  for (int i = 0; i < 4; ++i) {
    const TypeParam d = y->cpu_data()[i] - t->cpu_data()[i];
    expected += d * d;
  }
  expected /= 2 * 4;
  EXPECT_NEAR(loss, expected, 1e-5);
  ASSERT_EQ(net.output_blobs().size(), 1u);
  EXPECT_EQ(net.output_blobs()[0], net.blob_by_name("loss").get());
}

TYPED_TEST(NetTest, InPlaceLayerSharesBlob) {
  Net<TypeParam> net(this->Parse(kTinyNet));
  const int relu = 2;
  EXPECT_EQ(net.bottom_vecs()[relu][0], net.top_vecs()[relu][0]);
  // The relu output is non-negative in the shared blob.
  FillInputs(net, 5);
  net.Forward();
  const auto h = net.blob_by_name("h");
  for (int i = 0; i < h->count(); ++i) EXPECT_GE(h->cpu_data()[i], 0);
}

TYPED_TEST(NetTest, PhaseFilteringWithStagesAndLevels) {
  const std::string text = R"(
    layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 2 } } }
    layer { name: "train_only" type: "ReLU" bottom: "x" top: "a" include { phase: TRAIN } }
    layer { name: "test_only" type: "ReLU" bottom: "x" top: "b" include { phase: TEST } }
    layer { name: "staged" type: "ReLU" bottom: "x" top: "c" include { stage: "deploy" } }
    layer { name: "not_staged" type: "ReLU" bottom: "x" top: "d" exclude { stage: "deploy" } }
    layer { name: "leveled" type: "ReLU" bottom: "x" top: "e" include { min_level: 2 } }
    layer { name: "capped" type: "ReLU" bottom: "x" top: "f" include { max_level: 0 } }
  )";
  NetParameter param = this->Parse(text);
  param.mutable_state()->set_phase(TRAIN);
  Net<TypeParam> train(param);
  EXPECT_TRUE(train.has_layer("train_only"));
  EXPECT_FALSE(train.has_layer("test_only"));
  EXPECT_FALSE(train.has_layer("staged"));
  EXPECT_TRUE(train.has_layer("not_staged"));
  EXPECT_FALSE(train.has_layer("leveled"));
  EXPECT_TRUE(train.has_layer("capped"));

  param.mutable_state()->set_phase(TEST);
  param.mutable_state()->add_stage("deploy");
  param.mutable_state()->set_level(3);
  Net<TypeParam> test(param);
  EXPECT_FALSE(test.has_layer("train_only"));
  EXPECT_TRUE(test.has_layer("test_only"));
  EXPECT_TRUE(test.has_layer("staged"));
  EXPECT_FALSE(test.has_layer("not_staged"));
  EXPECT_TRUE(test.has_layer("leveled"));
  EXPECT_FALSE(test.has_layer("capped"));
}

// An Input layer without shapes leaves its tops unshaped: a layer on one, a Split inserted
// for a fan-out included, is an Error naming the blob (found by tests/fuzz/net_prototxt_fuzzer:
// the Split took the never-shaped blob for a scalar and failed a CHECK).
TYPED_TEST(NetTest, ConsumingAnUnshapedInputIsAnError) {
  const std::string fan_out = R"(
    layer { name: "in" type: "Input" top: "x" }
    layer { name: "a" type: "AbsVal" bottom: "x" top: "a" }
    layer { name: "b" type: "AbsVal" bottom: "x" top: "b" })";
  ExpectError([&] { Net<TypeParam> net(this->Parse(fan_out)); },
              {"bottom 'x' has no shape", "input_param"});
  const std::string single = R"(
    layer { name: "in" type: "Input" top: "x" }
    layer { name: "flat" type: "Flatten" bottom: "x" top: "f" })";
  ExpectError([&] { Net<TypeParam> net(this->Parse(single)); },
              {"layer 'flat' (Flatten)", "bottom 'x' has no shape"});
  // Unshaped and unused stays allowed (shapes may be set before the first Reshape).
  Net<TypeParam> unused(this->Parse(R"(layer { name: "in" type: "Input" top: "x" })"));
  EXPECT_EQ(unused.blob_by_name("x")->count(), 0);
}

TYPED_TEST(NetTest, InsertsSplitWhereABlobFansOut) {
  const std::string text = R"(
    state { phase: TRAIN }
    layer { name: "in" type: "Input" top: "x" top: "t"
            input_param { shape { dim: 2 dim: 3 } shape { dim: 2 dim: 3 } } }
    layer { name: "a" type: "ReLU" bottom: "x" top: "a" }
    layer { name: "b" type: "Sigmoid" bottom: "x" top: "b" }
    layer { name: "sum" type: "Eltwise" bottom: "a" bottom: "b" top: "s" }
    layer { name: "loss" type: "EuclideanLoss" bottom: "s" bottom: "t" top: "loss" }
  )";
  Net<TypeParam> net(this->Parse(text));
  ASSERT_TRUE(net.has_layer("x_in_0_split"));
  EXPECT_STREQ(net.layer_by_name("x_in_0_split")->type(), "Split");
  EXPECT_TRUE(net.has_blob("x_in_0_split_0"));
  EXPECT_TRUE(net.has_blob("x_in_0_split_1"));
  // Gradients from both branches meet in x's diff: compare with a finite difference.
  NetParameter forced = this->Parse(text);
  forced.set_force_backward(true);
  Net<TypeParam> grad_net(forced);
  Rng rng(7);
  FillGaussian(grad_net.blob_by_name("x").get(), rng);
  FillGaussian(grad_net.blob_by_name("t").get(), rng);
  grad_net.ForwardBackward();
  auto x = grad_net.blob_by_name("x");
  std::vector<TypeParam> analytic(x->cpu_diff(), x->cpu_diff() + x->count());
  const TypeParam h = 1e-3;
  for (int i = 0; i < x->count(); ++i) {
    const TypeParam keep = x->cpu_data()[i];
    if (std::fabs(keep) < 2 * h) continue;  // the ReLU kink
    x->mutable_cpu_data()[i] = keep + h;
    TypeParam plus;
    grad_net.Forward(&plus);
    x->mutable_cpu_data()[i] = keep - h;
    TypeParam minus;
    grad_net.Forward(&minus);
    x->mutable_cpu_data()[i] = keep;
    EXPECT_NEAR(analytic[i], (plus - minus) / (2 * h), 2e-3) << "element " << i;
  }
}

TYPED_TEST(NetTest, LossWeightScalesLossAndGradient) {
  NetParameter param = this->Parse(kTinyNet);
  Net<TypeParam> plain(param);
  param.mutable_layer(4)->add_loss_weight(2.5);
  Net<TypeParam> weighted(param);
  FillInputs(plain, 11);
  FillInputs(weighted, 11);
  weighted.ShareTrainedLayersWith(plain);
  TypeParam loss_plain, loss_weighted;
  plain.ClearParamDiffs();
  weighted.ClearParamDiffs();
  loss_plain = plain.ForwardBackward();
  loss_weighted = weighted.ForwardBackward();
  EXPECT_NEAR(loss_weighted, 2.5 * loss_plain, 1e-5);
  for (std::size_t i = 0; i < plain.arena_count(); ++i) {
    EXPECT_NEAR(weighted.arena_diff()[i], 2.5 * plain.arena_diff()[i], 1e-5);
  }
}

TYPED_TEST(NetTest, SharedWeightsAccumulateIntoOwner) {
  const std::string text = R"(
    state { phase: TRAIN }
    layer { name: "in" type: "Input" top: "x" top: "t"
            input_param { shape { dim: 2 dim: 3 } shape { dim: 2 dim: 3 } } }
    layer { name: "ip1" type: "InnerProduct" bottom: "x" top: "h"
            param { name: "shared_w" } param { name: "shared_b" }
            inner_product_param { num_output: 3 weight_filler { type: "gaussian" } } }
    layer { name: "ip2" type: "InnerProduct" bottom: "h" top: "y"
            param { name: "shared_w" } param { name: "shared_b" }
            inner_product_param { num_output: 3 weight_filler { type: "gaussian" } } }
    layer { name: "loss" type: "EuclideanLoss" bottom: "y" bottom: "t" top: "loss" }
  )";
  Net<TypeParam> net(this->Parse(text));
  EXPECT_EQ(net.params().size(), 4u);
  ASSERT_EQ(net.learnable_params().size(), 2u);
  EXPECT_EQ(net.arena_count(), 9u + 3u);
  auto w1 = net.layer_by_name("ip1")->blobs()[0];
  auto w2 = net.layer_by_name("ip2")->blobs()[0];
  EXPECT_EQ(w1->cpu_data(), w2->cpu_data());
  EXPECT_EQ(w1->cpu_diff(), w2->cpu_diff());
  // The shared gradient is final only after ip1 (the earlier layer) ran backward.
  EXPECT_EQ(net.learnable_param_last_layer()[0], 1);
  Rng rng(2);
  FillGaussian(net.blob_by_name("x").get(), rng);
  FillGaussian(net.blob_by_name("t").get(), rng);
  net.ClearParamDiffs();
  net.ForwardBackward();
  // Finite difference through the shared weight sees both uses.
  const TypeParam h = 1e-3;
  for (int i = 0; i < w1->count(); ++i) {
    const TypeParam keep = w1->cpu_data()[i];
    w1->mutable_cpu_data()[i] = keep + h;
    TypeParam plus;
    net.Forward(&plus);
    w1->mutable_cpu_data()[i] = keep - h;
    TypeParam minus;
    net.Forward(&minus);
    w1->mutable_cpu_data()[i] = keep;
    EXPECT_NEAR(w1->cpu_diff()[i], (plus - minus) / (2 * h), 2e-3);
  }
}

TYPED_TEST(NetTest, BackwardPruningAndPropagateDown) {
  const std::string text = R"(
    state { phase: TRAIN }
    layer { name: "in" type: "Input" top: "x" top: "t"
            input_param { shape { dim: 2 dim: 3 } shape { dim: 2 dim: 2 } } }
    layer { name: "frozen" type: "InnerProduct" bottom: "x" top: "f"
            param { lr_mult: 0 } param { lr_mult: 0 }
            inner_product_param { num_output: 2 } }
    layer { name: "ip" type: "InnerProduct" bottom: "f" top: "y"
            inner_product_param { num_output: 2 } }
    layer { name: "side" type: "InnerProduct" bottom: "x" top: "unused"
            inner_product_param { num_output: 2 } }
    layer { name: "loss" type: "EuclideanLoss" bottom: "y" bottom: "t" top: "loss" }
  )";
  Net<TypeParam> net(this->Parse(text));
  // A Split follows "in" because x feeds two layers, so look layers up by name.
  const auto index = [&net](const std::string& name) {
    return std::find(net.layer_names().begin(), net.layer_names().end(), name) -
           net.layer_names().begin();
  };
  const auto& need = net.layer_need_backward();
  EXPECT_FALSE(need[index("frozen")]) << "frozen layer with lr_mult 0 and no gradient below";
  EXPECT_TRUE(need[index("ip")]);
  EXPECT_FALSE(need[index("side")]) << "layer that no loss depends on";
  EXPECT_TRUE(need[index("loss")]);

  NetParameter stop = this->Parse(text);
  stop.mutable_layer(2)->add_propagate_down(false);
  Net<TypeParam> stopped(stop);
  EXPECT_FALSE(stopped.bottom_need_backward()[index("ip")][0]);

  NetParameter forced = this->Parse(text);
  forced.set_force_backward(true);
  Net<TypeParam> all(forced);
  for (bool b : all.layer_need_backward()) EXPECT_TRUE(b);
  EXPECT_TRUE(all.bottom_need_backward()[4][0]);
  // Euclidean loss allows a gradient into its second bottom when forced.
  EXPECT_TRUE(all.bottom_need_backward()[index("loss")][1]);
}

TYPED_TEST(NetTest, ArenaIsInBackwardOrderAndCallbacksFire) {
  Net<TypeParam> net(this->Parse(kTinyNet));
  // ip2 (layer 3) finishes first, so its weight sits at the start of the arena.
  ASSERT_EQ(net.learnable_params().size(), 4u);
  EXPECT_EQ(net.learnable_params()[0], net.layer_by_name("ip2")->blobs()[0].get());
  EXPECT_EQ(net.learnable_param_offsets()[0], 0u);
  EXPECT_EQ(net.learnable_params()[0]->cpu_data(), net.arena_data());
  EXPECT_EQ(net.learnable_params()[1]->cpu_data(), net.arena_data() + 2);
  std::vector<int> order;
  net.add_after_backward([&order](int layer) { order.push_back(layer); });
  std::vector<int> forward_order;
  net.add_after_forward([&forward_order](int layer) { forward_order.push_back(layer); });
  FillInputs(net, 1);
  net.ForwardBackward();
  EXPECT_EQ(order, (std::vector<int>{4, 3, 2, 1, 0}));
  EXPECT_EQ(forward_order, (std::vector<int>{0, 1, 2, 3, 4}));
  // Update is one pass over the arena: data -= diff.
  std::vector<TypeParam> before(net.arena_data(), net.arena_data() + net.arena_count());
  net.Update();
  for (std::size_t i = 0; i < net.arena_count(); ++i) {
    EXPECT_NEAR(net.arena_data()[i], before[i] - net.arena_diff()[i], 1e-6);
  }
}

TYPED_TEST(NetTest, PrototxtEqualsNetBuiltInCode) {
  NetParameter code;
  code.set_name("tiny");
  code.mutable_state()->set_phase(TRAIN);
  LayerParameter* in = code.add_layer();
  in->set_name("in");
  in->set_type("Input");
  in->add_top("x");
  in->add_top("target");
  BlobShape* xs = in->mutable_input_param()->add_shape();
  xs->add_dim(4);
  xs->add_dim(3);
  BlobShape* ts = in->mutable_input_param()->add_shape();
  ts->add_dim(4);
  ts->add_dim(1);
  LayerParameter* ip1 = code.add_layer();
  ip1->set_name("ip1");
  ip1->set_type("InnerProduct");
  ip1->add_bottom("x");
  ip1->add_top("h");
  ip1->mutable_inner_product_param()->set_num_output(2);
  ip1->mutable_inner_product_param()->mutable_weight_filler()->set_type("gaussian");
  ip1->mutable_inner_product_param()->mutable_weight_filler()->set_std(0.5);
  ip1->mutable_inner_product_param()->mutable_bias_filler()->set_type("constant");
  ip1->mutable_inner_product_param()->mutable_bias_filler()->set_value(0.1);
  LayerParameter* relu = code.add_layer();
  relu->set_name("relu");
  relu->set_type("ReLU");
  relu->add_bottom("h");
  relu->add_top("h");
  LayerParameter* ip2 = code.add_layer();
  ip2->set_name("ip2");
  ip2->set_type("InnerProduct");
  ip2->add_bottom("h");
  ip2->add_top("y");
  ip2->mutable_inner_product_param()->set_num_output(1);
  ip2->mutable_inner_product_param()->mutable_weight_filler()->set_type("gaussian");
  ip2->mutable_inner_product_param()->mutable_weight_filler()->set_std(0.5);
  LayerParameter* loss = code.add_layer();
  loss->set_name("loss");
  loss->set_type("EuclideanLoss");
  loss->add_bottom("y");
  loss->add_bottom("target");
  loss->add_top("loss");

  NetParameter text = this->Parse(kTinyNet);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(code, text));
  Net<TypeParam> a(code, 42);
  Net<TypeParam> b(text, 42);
  ASSERT_EQ(a.arena_count(), b.arena_count());
  for (std::size_t i = 0; i < a.arena_count(); ++i) {
    EXPECT_EQ(a.arena_data()[i], b.arena_data()[i]);
  }
  EXPECT_EQ(a.blob_names(), b.blob_names());
  FillInputs(a, 9);
  FillInputs(b, 9);
  TypeParam la, lb;
  a.Forward(&la);
  b.Forward(&lb);
  EXPECT_EQ(la, lb);
}

TYPED_TEST(NetTest, WeightsRoundTripThroughCaffemodel) {
  Net<TypeParam> trained(this->Parse(kTinyNet), 1);
  Net<TypeParam> fresh(this->Parse(kTinyNet), 2);
  TempDir dir;
  const std::string path = dir.path() + "/tiny.caffemodel";
  NetParameter weights;
  trained.ToProto(&weights);
  WriteProtoToBinaryFile(weights, path);
  fresh.CopyTrainedLayersFromFile(path);
  for (std::size_t i = 0; i < trained.arena_count(); ++i) {
    EXPECT_NEAR(fresh.arena_data()[i], trained.arena_data()[i], 1e-7);
  }
}

TYPED_TEST(NetTest, WeightShapeMismatchNamesLayerAndShapes) {
  Net<TypeParam> net(this->Parse(kTinyNet));
  NetParameter other_text = this->Parse(kTinyNet);
  other_text.mutable_layer(1)->mutable_inner_product_param()->set_num_output(5);
  Net<TypeParam> other(other_text);
  NetParameter weights;
  other.ToProto(&weights);
  try {
    net.CopyTrainedLayersFrom(weights);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ip1"), std::string::npos) << what;
    EXPECT_NE(what.find("5 3"), std::string::npos) << what;
    EXPECT_NE(what.find("2 3"), std::string::npos) << what;
  }
}

// ---- bad input -------------------------------------------------------------------------

TYPED_TEST(NetTest, UnknownLayerTypeNamesLayerAndType) {
  const std::string what = ErrorMessageOf([this] {
    Net<TypeParam> net(this->Parse(R"(layer { name: "mystery" type: "Teleport" top: "x" })"));
  });
  EXPECT_NE(what.find("mystery"), std::string::npos) << what;
  EXPECT_NE(what.find("Teleport"), std::string::npos) << what;
}

TYPED_TEST(NetTest, MissingBottomIsAnError) {
  const std::string what = ErrorMessageOf([this] {
    Net<TypeParam> net(this->Parse(R"(
      layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 2 } } }
      layer { name: "r" type: "ReLU" bottom: "nowhere" top: "y" })"));
  });
  EXPECT_NE(what.find("'r'"), std::string::npos) << what;
  EXPECT_NE(what.find("nowhere"), std::string::npos) << what;
}

TYPED_TEST(NetTest, TopProducedTwiceIsAnError) {
  const std::string what = ErrorMessageOf([this] {
    Net<TypeParam> net(this->Parse(R"(
      layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 2 } } }
      layer { name: "a" type: "ReLU" bottom: "x" top: "y" }
      layer { name: "b" type: "Sigmoid" bottom: "x" top: "y" })"));
  });
  EXPECT_NE(what.find("'y'"), std::string::npos) << what;
  EXPECT_NE(what.find("already produced"), std::string::npos) << what;
}

TYPED_TEST(NetTest, UnsupportedFieldIsNamed) {
  const std::string what = ErrorMessageOf([this] {
    this->Parse(R"(
      layer { name: "c" type: "Convolution" bottom: "x" top: "y"
              convolution_param { num_output: 1 kernel_size: 1 force_nd_im2col: true } })");
  });
  EXPECT_NE(what.find("force_nd_im2col"), std::string::npos) << what;
  EXPECT_NE(what.find("'c'"), std::string::npos) << what;
}

TYPED_TEST(NetTest, MalformedPrototxtNamesLineAndColumn) {
  const std::string what = ErrorMessageOf(
      [this] { this->Parse("name: \"x\"\nlayer {\n  name: \"a\"\n  typo_field: 3\n}\n"); });
  EXPECT_NE(what.find("test net:4:"), std::string::npos) << what;
  EXPECT_NE(what.find("typo_field"), std::string::npos) << what;
}

TYPED_TEST(NetTest, MissingModelFileIsNamed) {
  const std::string what =
      ErrorMessageOf([] { ReadNetParamsFromTextFile("/nonexistent/dir/net.prototxt"); });
  EXPECT_NE(what.find("/nonexistent/dir/net.prototxt"), std::string::npos) << what;
}

TYPED_TEST(NetTest, ZeroOrNegativeInputDimensionIsAnError) {
  const std::string what = ErrorMessageOf([this] {
    Net<TypeParam> net(this->Parse(R"(layer { name: "in" type: "Input" top: "x"
                              input_param { shape { dim: 2 dim: -3 } } })"));
  });
  EXPECT_NE(what.find("'in'"), std::string::npos) << what;
}

TYPED_TEST(NetTest, BinaryNetParameterReadsBackIdentically) {
  NetParameter param = this->Parse(kTinyNet);
  TempDir dir;
  const std::string path = dir.path() + "/net.binaryproto";
  WriteProtoToBinaryFile(param, path);
  NetParameter back;
  ReadProtoFromBinaryFile(path, &back);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(param, back));
}

TEST(NetIo, AtomicWriteHonoursTheCreationMask) {
  TempDir dir;
  const std::string path = dir.path() + "/weights.caffemodel";
  const mode_t previous = umask(027);
  WriteFileAtomically("weights", path);
  umask(previous);
  struct stat info;
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0640u);
}

TEST(NetIo, AtomicWriteFailureKeepsOldFile) {
  TempDir dir;
  const std::string path = dir.path() + "/keep.bin";
  WriteFileAtomically("old contents", path);
  {
    ScopedWriteFault write_fault("keep");
    EXPECT_THROW(WriteFileAtomically("new contents that will not land", path), Error);
  }
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "old contents");
  // No temporary file is left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

}  // namespace
}  // namespace doppio
