// Caffe's published reference models parse and build, and run one forward/backward at a
// reduced batch.
#include <gtest/gtest.h>

#include <string>

#include "doppio/core/net.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/synthetic_inputs.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

struct ModelCase {
  std::string name;
  std::vector<int> image;  // C,H,W the data layer would produce
};

void PrintTo(const ModelCase& model, std::ostream* out) { *out << model.name; }

std::string ModelPath(const std::string& model, const std::string& file) {
  return std::string(DOPPIO_SOURCE_DIR) + "/models/" + model + "/" + file;
}

class ReferenceModelTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ReferenceModelTest, TrainValBuildsInBothPhasesAndRuns) {
  const ModelCase& model = GetParam();
  const NetParameter param = ReadNetParamsFromTextFile(ModelPath(model.name, "train_val.prototxt"));
  for (Phase phase : {TRAIN, TEST}) {
    NetParameter phased = WithSyntheticInputs(param, 1, model.image);
    phased.mutable_state()->set_phase(phase);
    Net<float> net(phased);
    EXPECT_GT(net.arena_count(), 0u);
    float loss = 0;
    net.Forward(&loss);
    EXPECT_TRUE(std::isfinite(loss)) << model.name << " " << Phase_Name(phase);
    if (phase == TRAIN) {
      net.ClearParamDiffs();
      net.Backward();
      double gradient = 0;
      for (std::size_t i = 0; i < net.arena_count(); ++i)
        gradient += std::fabs(net.arena_diff()[i]);
      EXPECT_GT(gradient, 0) << model.name;
    }
  }
}

TEST_P(ReferenceModelTest, DeployBuildsAndRuns) {
  const ModelCase& model = GetParam();
  NetParameter param = ReadNetParamsFromTextFile(ModelPath(model.name, "deploy.prototxt"));
  param = WithSyntheticInputs(param, 1, {});
  param.mutable_state()->set_phase(TEST);
  Net<float> net(param);
  const auto& outputs = net.Forward();
  ASSERT_EQ(outputs.size(), 1u);
  // The deploy nets end in a softmax: probabilities that sum to one.
  double sum = 0;
  for (int i = 0; i < outputs[0]->count(); ++i) sum += outputs[0]->cpu_data()[i];
  EXPECT_NEAR(sum, 1.0, 1e-3) << model.name;
}

INSTANTIATE_TEST_SUITE_P(
    Models, ReferenceModelTest,
    ::testing::Values(ModelCase{"lenet", {1, 28, 28}}, ModelCase{"cifar10_quick", {3, 32, 32}},
                      ModelCase{"cifar10_full", {3, 32, 32}}, ModelCase{"alexnet", {}},
                      ModelCase{"googlenet", {}}, ModelCase{"resnet50", {}}),
    [](const ::testing::TestParamInfo<ModelCase>& info) { return info.param.name; });

TEST(ReferenceModels, Vgg16DeployParsesAndBuilds) {
  NetParameter param = ReadNetParamsFromTextFile(ModelPath("vgg16", "deploy.prototxt"));
  param = WithSyntheticInputs(param, 1, {});
  Net<float> net(param);
  EXPECT_EQ(net.arena_count(), 138357544u);
}

TEST(ReferenceModels, SolversParse) {
  for (const char* model :
       {"lenet", "cifar10_quick", "cifar10_full", "alexnet", "googlenet", "resnet50"}) {
    SolverParameter solver = ReadSolverParamsFromTextFile(ModelPath(model, "solver.prototxt"));
    EXPECT_FALSE(solver.net().empty()) << model;
  }
}

}  // namespace
}  // namespace doppio
