// Caffe's published reference models parse and build, and run one forward/backward at a
// reduced batch; so does every other prototxt under models/ and examples/.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "doppio/core/net.hpp"
#include "doppio/util/io.hpp"
#include "synthetic_inputs.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

struct ModelCase {
  std::string name;
  std::vector<int> image;  // C,H,W the data layer would produce
};

void PrintTo(const ModelCase& model, std::ostream* out) { *out << model.name; }

std::string ModelPath(const std::string& model, const std::string& file) {
  return SourceDir() + "/models/" + model + "/" + file;
}

class ReferenceModelTest : public ::testing::TestWithParam<ModelCase> {};

// An untrained net's stored BatchNorm statistics are zeros, which normalise by 1 / sqrt(eps),
// x316 per BatchNorm: ResNet-50's TEST activations overflow by res3b, and the loss is NaN, as
// NaN propagates on every engine. Unit variances, a fresh PyTorch BatchNorm's, keep it finite.
void UseUnitVariances(Net<float>& net) {
  for (const auto& layer : net.layers()) {
    if (std::string(layer->type()) != "BatchNorm") continue;
    const auto& blobs = layer->blobs();
    std::fill_n(blobs[1]->mutable_cpu_data(), blobs[1]->count(), 1.f);
    blobs[2]->mutable_cpu_data()[0] = 1.f;
  }
}

TEST_P(ReferenceModelTest, TrainValBuildsInBothPhasesAndRuns) {
  const ModelCase& model = GetParam();
  const NetParameter param = ReadNetParamsFromTextFile(ModelPath(model.name, "train_val.prototxt"));
  for (Phase phase : {TRAIN, TEST}) {
    NetParameter phased = WithSyntheticInputs(param, 1, model.image);
    phased.mutable_state()->set_phase(phase);
    Net<float> net(phased);
    EXPECT_GT(net.arena_count(), 0u);
    if (phase == TEST) UseUnitVariances(net);
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

TEST(ReferenceModels, Vgg16DeployParsesBuildsAndRuns) {
  NetParameter param = ReadNetParamsFromTextFile(ModelPath("vgg16", "deploy.prototxt"));
  param = WithSyntheticInputs(param, 1, {});
  Net<float> net(param);
  EXPECT_EQ(net.arena_count(), 138357544u);
  const auto& outputs = net.Forward();
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0]->count(), 1000);
  double sum = 0;
  for (int i = 0; i < outputs[0]->count(); ++i) sum += outputs[0]->cpu_data()[i];
  EXPECT_NEAR(sum, 1.0, 1e-3);
}

TEST(ReferenceModels, SolversParse) {
  for (const char* model :
       {"lenet", "cifar10_quick", "cifar10_full", "alexnet", "googlenet", "resnet50"}) {
    SolverParameter solver = ReadSolverParamsFromTextFile(ModelPath(model, "solver.prototxt"));
    EXPECT_FALSE(solver.net().empty()) << model;
  }
}

// --- Every prototxt of models/ and examples/ ---------------------------------------------

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The prototxts under models/ and examples/, relative to the repository root.
std::vector<std::string> AllPrototxts() {
  std::vector<std::string> files;
  for (const char* top : {"models", "examples"}) {
    const std::filesystem::path root = std::filesystem::path(SourceDir()) / top;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      if (entry.path().extension() == ".prototxt") {
        files.push_back(std::filesystem::relative(entry.path(), SourceDir()).string());
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool IsSolver(const std::string& file) { return file.find("solver") != std::string::npos; }

// C,H,W of a net's images: MNIST-like data sets are gray 28 x 28 and CIFAR-10 is 32 x 32
// colour, cropped when transform_param.crop_size says so; others come from crop_size.
std::vector<int> ImageShapeOf(const NetParameter& param) {
  for (const auto& layer : param.layer()) {
    if (layer.type() != "Data") continue;
    const std::string& source = layer.data_param().source();
    const int crop = static_cast<int>(layer.transform_param().crop_size());
    if (source.find("mnist") != std::string::npos) return {1, crop ? crop : 28, crop ? crop : 28};
    if (source.find("cifar") != std::string::npos) return {3, crop ? crop : 32, crop ? crop : 32};
  }
  return {};
}

// Builds a train/test net at batch 2 for TRAIN and for each of the solver's test states (a
// plain TEST when it gives none), and runs forward and backward.
void RunTrainVal(const std::string& file, const SolverParameter& solver) {
  SCOPED_TRACE(file);
  const NetParameter param = ReadNetParamsFromTextFile(SourceDir() + "/" + file);
  std::vector<NetState> states(1);
  states[0].set_phase(TRAIN);
  for (const NetState& test_state : solver.test_state()) states.push_back(test_state);
  if (solver.test_state_size() == 0) states.emplace_back();
  for (std::size_t i = 1; i < states.size(); ++i) states[i].set_phase(TEST);
  for (const NetState& state : states) {
    const Phase phase = state.phase();
    NetParameter phased = WithSyntheticInputs(param, 2, ImageShapeOf(param));
    *phased.mutable_state() = state;
    Net<float> net(phased);
    float loss = 0;
    net.Forward(&loss);
    EXPECT_TRUE(std::isfinite(loss)) << state.ShortDebugString();
    if (phase == TRAIN) {
      net.ClearParamDiffs();
      net.Backward();
      double gradient = 0;
      for (std::size_t i = 0; i < net.arena_count(); ++i)
        gradient += std::fabs(net.arena_diff()[i]);
      EXPECT_GT(gradient, 0);
    }
  }
}

TEST(AllPrototxts, EverySolverNamesAnExistingNetThatTrainsAndTests) {
  int solvers = 0;
  for (const std::string& file : AllPrototxts()) {
    if (!IsSolver(file)) continue;
    SCOPED_TRACE(file);
    ++solvers;
    const SolverParameter solver = ReadSolverParamsFromTextFile(SourceDir() + "/" + file);
    // Paths are relative to the repository root, where the examples run.
    ASSERT_TRUE(std::filesystem::exists(SourceDir() + "/" + solver.net()))
        << "net: \"" << solver.net() << "\"";
    EXPECT_TRUE(std::filesystem::is_directory(
        std::filesystem::path(SourceDir() + "/" + solver.snapshot_prefix()).parent_path()))
        << "snapshot_prefix: \"" << solver.snapshot_prefix() << "\"";
    EXPECT_GT(solver.max_iter(), 0);
    EXPECT_GT(solver.base_lr(), 0);
    // The models/ nets are checked by ReferenceModelTest, the nets with Python layers (which
    // import their module from PYTHONPATH) by python/tests/test_examples.py; the rest here.
    const NetParameter net = ReadNetParamsFromTextFile(SourceDir() + "/" + solver.net());
    const bool has_python = std::any_of(net.layer().begin(), net.layer().end(),
                                        [](const auto& layer) { return layer.type() == "Python"; });
    if (solver.net().rfind("models/", 0) != 0 && !has_python) RunTrainVal(solver.net(), solver);
  }
  EXPECT_GE(solvers, 6);
}

TEST(AllPrototxts, EveryDeployNetRunsAtBatchOne) {
  int deploys = 0;
  for (const std::string& file : AllPrototxts()) {
    if (file.find("deploy") == std::string::npos || file.rfind("models/", 0) == 0) continue;
    SCOPED_TRACE(file);
    ++deploys;
    NetParameter param = ReadNetParamsFromTextFile(SourceDir() + "/" + file);
    param = WithSyntheticInputs(param, 1, {});
    Net<float> net(param);
    const auto& outputs = net.Forward();
    ASSERT_EQ(outputs.size(), 1u);
    double sum = 0;
    for (int i = 0; i < outputs[0]->count(); ++i) sum += outputs[0]->cpu_data()[i];
    EXPECT_NEAR(sum, 1.0, 1e-3);
  }
  EXPECT_GE(deploys, 1);
}

TEST(AllPrototxts, DataSourcesAreWhatTheDataScriptsBuild) {
  // Each LMDB and mean file a net reads lies in data/<set>/ and is named by that folder's
  // script, so that running the script is all a model needs.
  for (const std::string& file : AllPrototxts()) {
    if (IsSolver(file)) continue;
    SCOPED_TRACE(file);
    const NetParameter param = ReadNetParamsFromTextFile(SourceDir() + "/" + file);
    for (const auto& layer : param.layer()) {
      if (layer.type() != "Data") continue;
      std::vector<std::string> paths = {layer.data_param().source()};
      if (layer.transform_param().has_mean_file())
        paths.push_back(layer.transform_param().mean_file());
      for (const std::string& path : paths) {
        const std::filesystem::path relative(path);
        ASSERT_EQ(relative.begin()->string(), "data") << path;
        const std::filesystem::path folder =
            std::filesystem::path(SourceDir()) / relative.parent_path();
        ASSERT_TRUE(std::filesystem::is_directory(folder)) << path;
        bool named = false;
        for (const auto& entry : std::filesystem::directory_iterator(folder)) {
          if (entry.path().extension() == ".sh" &&
              ReadFile(entry.path().string()).find(relative.filename().string()) !=
                  std::string::npos) {
            named = true;
          }
        }
        EXPECT_TRUE(named) << path << " is not built by a script in " << relative.parent_path();
      }
    }
  }
}

}  // namespace
}  // namespace doppio
