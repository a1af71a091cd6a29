// LARS and LARC (larc.hpp): the trust ratio against a hand computation on a two-layer net,
// the plain rate where a norm is zero, clip against scale, resume, and bad fields.
#include "doppio/solvers/larc.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <type_traits>

#include "solver_test_util.hpp"

namespace doppio {
namespace {

using namespace solver_test;

template <typename Dtype>
class LarcTest : public ::testing::Test {
 protected:
  // One step of momentum-free SGD on LeastSquaresNet, and the same step written out here from
  // the net's gradients at the initial weights: for each blob, rate = the global rate scaled
  // by eta ||w|| / (||g|| + decay ||w||) (biases: the plain rate unless included), then
  // w -= rate * lr_mult * (g + decay w).
  void ExpectOneStepMatchesHandComputation(const std::string& policy, bool include_bias) {
    SCOPED_TRACE(policy + (include_bias ? ", biases included" : ""));
    std::ostringstream extra;
    extra << "type: 'SGD' momentum: 0 weight_decay: 0.01 larc: true larc_eta: 0.02 "
          << "larc_policy: '" << policy
          << "' larc_include_bias_bn: " << (include_bias ? "true" : "false");
    SolverParameter param = LeastSquaresSolver(extra.str());
    // ip2's bias starts non-zero, so that every blob has a trust ratio.
    param.mutable_net_param()
        ->mutable_layer(3)
        ->mutable_inner_product_param()
        ->mutable_bias_filler()
        ->set_value(0.2f);
    // The fields are floats: the hand computation starts from the values the solver reads.
    const double base_lr = param.base_lr(), eta = param.larc_eta();
    const double weight_decay = param.weight_decay();
    auto solver = MakeSolver<Dtype>(param);
    auto reference = MakeSolver<Dtype>(param);
    Net<Dtype>& net = *reference->net();
    FillIterationData(net, 0);
    net.ClearParamDiffs();
    net.ForwardBackward();
    std::vector<double> expected;
    int larc_blobs = 0;
    for (const Blob<Dtype>* blob : net.learnable_params()) {
      double wsq = 0, gsq = 0;
      for (int i = 0; i < blob->count(); ++i) {
        wsq += double(blob->cpu_data()[i]) * blob->cpu_data()[i];
        gsq += double(blob->cpu_diff()[i]) * blob->cpu_diff()[i];
      }
      ASSERT_GT(wsq, 0);
      ASSERT_GT(gsq, 0);
      double rate = base_lr;
      if (blob->num_axes() > 1 || include_bias) {
        ++larc_blobs;
        const double local =
            eta * std::sqrt(wsq) / (std::sqrt(gsq) + weight_decay * std::sqrt(wsq));
        rate = policy == "clip" ? std::min(local, base_lr) : base_lr * local;
      }
      for (int i = 0; i < blob->count(); ++i) {
        const double w = blob->cpu_data()[i];
        expected.push_back(w - rate * (blob->cpu_diff()[i] + weight_decay * w));
      }
    }
    EXPECT_EQ(larc_blobs, include_bias ? 4 : 2);
    solver->Step(1);
    const std::vector<Dtype> actual = Weights(*solver);
    ASSERT_EQ(actual.size(), expected.size());
    const double tolerance = std::is_same<Dtype, float>::value ? 1e-6 : 1e-12;
    for (std::size_t i = 0; i < actual.size(); ++i) {
      EXPECT_NEAR(actual[i], expected[i], tolerance * (1 + std::fabs(expected[i])))
          << "weight " << i;
    }
  }
};
TYPED_TEST_SUITE(LarcTest, TestDtypes);

TYPED_TEST(LarcTest, OneScaleStepMatchesTheHandComputedTrustRatio) {
  this->ExpectOneStepMatchesHandComputation("scale", false);
}

TYPED_TEST(LarcTest, OneClipStepMatchesTheHandComputedTrustRatio) {
  this->ExpectOneStepMatchesHandComputation("clip", false);
}

TYPED_TEST(LarcTest, BiasesTakeTheTrustRatioWhenIncluded) {
  this->ExpectOneStepMatchesHandComputation("scale", true);
}

TEST(LarcRateTest, ScaleMultipliesAndClipCapsTheGlobalRate) {
  SolverParameter param;
  param.set_larc_eta(0.01f);
  // local = 0.01 * 3 / (4 + 0.5 * 3) = 0.03 / 5.5
  const double local = static_cast<double>(0.01f) * 3 / 5.5;
  param.set_larc_policy("scale");
  EXPECT_DOUBLE_EQ(LarcRate(param, 0.1, 3, 4, 0.5), 0.1 * local);
  param.set_larc_policy("clip");
  EXPECT_DOUBLE_EQ(LarcRate(param, 0.1, 3, 4, 0.5), local);
  // Clip never raises the rate above the global one.
  EXPECT_DOUBLE_EQ(LarcRate(param, 0.001, 3, 4, 0.5), 0.001);
}

TEST(LarcRateTest, AZeroNormGivesThePlainRate) {
  SolverParameter param;
  for (const char* policy : {"scale", "clip"}) {
    param.set_larc_policy(policy);
    EXPECT_EQ(LarcRate(param, 0.1, 0, 4, 0.5), 0.1) << policy;
    EXPECT_EQ(LarcRate(param, 0.1, 3, 0, 0), 0.1) << policy;
    EXPECT_EQ(LarcRate(param, 0.1, 0, 0, 0), 0.1) << policy;
  }
}

// ip2's weights are zero, so ip1 gets no gradient either: every LARC blob has a zero norm, and
// the step is plain SGD's, with no NaN.
TYPED_TEST(LarcTest, ZeroWeightsAndGradientsTrainAsPlainSgd) {
  using Dtype = TypeParam;
  NetParameter net = ParseText<NetParameter>(LeastSquaresNet());
  net.mutable_layer(3)->mutable_inner_product_param()->mutable_weight_filler()->set_type(
      "constant");
  const std::string common = "type: 'SGD' momentum: 0.9 weight_decay: 0.01 ";
  SolverParameter plain = LeastSquaresSolver(common);
  *plain.mutable_net_param() = net;
  SolverParameter larc = plain;
  larc.MergeFrom(ParseText<SolverParameter>("larc: true larc_policy: 'scale' larc_eta: 0.5"));
  auto a = MakeSolver<Dtype>(plain);
  auto b = MakeSolver<Dtype>(larc);
  a->Step(1);
  b->Step(1);
  const std::vector<Dtype> expected = Weights(*a), actual = Weights(*b);
  EXPECT_EQ(actual, expected);
  for (Dtype w : actual) EXPECT_TRUE(std::isfinite(w));
  EXPECT_NE(expected, Weights(*MakeSolver<Dtype>(plain)));
}

// A huge eta makes every trust ratio exceed the global rate: clip then changes nothing, while
// scale multiplies the rate up.
TYPED_TEST(LarcTest, ClipAtAHugeEtaIsPlainTrainingAndScaleIsNot) {
  using Dtype = TypeParam;
  for (const char* type : {"SGD", "Nesterov"}) {
    SCOPED_TRACE(type);
    const std::string common = std::string("type: '") + type + "' momentum: 0.9 ";
    auto plain = MakeSolver<Dtype>(LeastSquaresSolver(common));
    auto clip = MakeSolver<Dtype>(
        LeastSquaresSolver(common + "larc: true larc_policy: 'clip' larc_eta: 1e6"));
    auto scale = MakeSolver<Dtype>(
        LeastSquaresSolver(common + "larc: true larc_policy: 'scale' larc_eta: 1e-3"));
    plain->Step(3);
    clip->Step(3);
    scale->Step(3);
    EXPECT_EQ(Weights(*clip), Weights(*plain));
    EXPECT_NE(Weights(*scale), Weights(*plain));
  }
}

// LARC keeps no state of its own: a snapshot's momentum history resumes it exactly.
TYPED_TEST(LarcTest, ResumeFromASnapshotMatchesUninterruptedTraining) {
  using Dtype = TypeParam;
  TempDir dir;
  const SolverParameter param = LeastSquaresSolver(
      "type: 'Nesterov' momentum: 0.9 weight_decay: 0.01 larc: true larc_policy: 'clip' "
      "larc_eta: 0.01 snapshot_prefix: '" +
      dir.path() + "/larc'");
  auto straight = MakeSolver<Dtype>(param);
  straight->Step(6);
  auto first = MakeSolver<Dtype>(param);
  first->Step(3);
  first->Snapshot();
  auto resumed = MakeSolver<Dtype>(param);
  resumed->Restore(first->SnapshotFilename(".solverstate"));
  resumed->Step(3);
  EXPECT_EQ(Weights(*resumed), Weights(*straight));
}

TYPED_TEST(LarcTest, BadFieldsAreErrorsNamingThem) {
  using Dtype = TypeParam;
  auto create = [](const std::string& extra) {
    SolverRegistry<Dtype>::CreateSolver(LeastSquaresSolver(extra));
  };
  EXPECT_ERROR_WITH(create("larc: true larc_eta: 0"), "larc_eta", "positive");
  EXPECT_ERROR_WITH(create("larc: true larc_eta: -0.1"), "larc_eta", "-0.1");
  EXPECT_ERROR_WITH(create("larc: true larc_policy: 'trust'"), "larc_policy", "'trust'");
  EXPECT_ERROR_WITH(create("larc_policy: 'trust'"), "larc_policy");
  EXPECT_ERROR_WITH(create("larc: true type: 'Adam'"), "larc", "'Adam'", "type");
  EXPECT_ERROR_WITH(create("larc: true type: 'AdaGrad'"), "larc", "'AdaGrad'");
  EXPECT_ERROR_WITH(create("reference_batch: 0"), "reference_batch", "positive");
  EXPECT_ERROR_WITH(create("reference_batch: -64"), "reference_batch", "-64");
  // Adam without larc keeps working.
  create("type: 'Adam' larc_policy: 'clip'");
}

// Biases (one axis) and every blob of a Scale, Bias or BatchNorm layer are left out unless
// larc_include_bias_bn.
TYPED_TEST(LarcTest, BiasesAndNormalisationParametersAreExcludedByDefault) {
  using Dtype = TypeParam;
  const char* net_text = R"(
    name: 'bn'
    layer { name: 'data' type: 'Input' top: 'x' top: 'y'
            input_param { shape { dim: 4 dim: 3 dim: 2 } shape { dim: 4 dim: 1 } } }
    layer { name: 'scale' type: 'Scale' bottom: 'x' top: 's'
            scale_param { axis: 1 num_axes: 2 filler { type: 'constant' value: 1 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 's' top: 'out'
            inner_product_param { num_output: 1 weight_filler { type: 'gaussian' std: 0.5 } } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'out' bottom: 'y' top: 'loss' })";
  SolverParameter param = LeastSquaresSolver("larc: true");
  *param.mutable_net_param() = ParseText<NetParameter>(net_text);
  auto solver = SolverRegistry<Dtype>::CreateSolver(param);
  const Net<Dtype>& net = *solver->net();
  std::vector<bool> expected;
  for (const Blob<Dtype>* blob : net.learnable_params()) {
    // The Scale layer's blob has two axes: excluded for its layer, not its shape.
    expected.push_back(blob->num_axes() == 2 && blob->shape(0) == 1);
  }
  EXPECT_EQ(LarcParams(param, net), expected);
  param.set_larc_include_bias_bn(true);
  EXPECT_EQ(LarcParams(param, net), std::vector<bool>(expected.size(), true));
  param.set_larc(false);
  EXPECT_EQ(LarcParams(param, net), std::vector<bool>(expected.size(), false));
}

}  // namespace
}  // namespace doppio
