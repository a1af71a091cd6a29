// Each solver's updates on a least-squares problem against a reference written here in
// plain loops: the net is data -> InnerProduct (one output) -> EuclideanLoss, and the data
// come from a small fixed table, `batch` rows per forward pass.
#include "doppio/solvers/sgd_solvers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "doppio/core/layer_registry.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "test_util.hpp"

namespace doppio {

namespace {
constexpr int kRows = 10;
constexpr int kDim = 3;
constexpr int kBatch = 2;

struct Table {
  double x[kRows][kDim];
  double y[kRows];
  Table() {
    Rng rng(2024);
    for (int r = 0; r < kRows; ++r) {
      for (int d = 0; d < kDim; ++d) x[r][d] = rng.Gaussian(0, 1);
      y[r] = 0.7 * x[r][0] - 1.3 * x[r][1] + 0.4 * x[r][2] + 0.5 + rng.Gaussian(0, 0.1);
    }
  }
};
const Table& Data() {
  static const Table table;
  return table;
}
}  // namespace

// Emits the next kBatch rows of the table (cycling) on every forward pass.
template <typename Dtype>
class TestSequenceDataLayer : public Layer<Dtype> {
 public:
  explicit TestSequenceDataLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  const char* type() const override { return "TestSequenceData"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int ExactNumTopBlobs() const override { return 2; }
  void Reshape(const typename Layer<Dtype>::BlobVec& bottom,
               const typename Layer<Dtype>::BlobVec& top) override {
    top[0]->Reshape(std::vector<int>{kBatch, kDim});
    top[1]->Reshape(std::vector<int>{kBatch, 1});
  }

 protected:
  void Forward_cpu(const typename Layer<Dtype>::BlobVec& bottom,
                   const typename Layer<Dtype>::BlobVec& top) override {
    for (int n = 0; n < kBatch; ++n, ++cursor_) {
      const int row = cursor_ % kRows;
      for (int d = 0; d < kDim; ++d) top[0]->mutable_cpu_data()[n * kDim + d] = Data().x[row][d];
      top[1]->mutable_cpu_data()[n] = Data().y[row];
    }
  }
  void Backward_cpu(const typename Layer<Dtype>::BlobVec&, const std::vector<bool>&,
                    const typename Layer<Dtype>::BlobVec&) override {}

 private:
  int cursor_ = 0;
};
DOPPIO_INSTANTIATE_CLASS(TestSequenceDataLayer);
REGISTER_LAYER_CLASS(TestSequenceData);

namespace {

struct Config {
  std::string name;
  std::string type;
  double base_lr = 0.1;
  double momentum = 0;
  double momentum2 = 0.999;
  double delta = 1e-8;
  double rms_decay = 0.99;
  double weight_decay = 0;
  std::string regularization = "L2";
  double clip = -1;
  int iter_size = 1;
  double weight_lr = 1, weight_decay_mult = 1, bias_lr = 1, bias_decay_mult = 1;
  std::string policy = "fixed";
  double gamma = 0;
  int stepsize = 0;
};

std::string SolverText(const Config& c) {
  std::ostringstream s;
  s.precision(17);
  s << "type: '" << c.type << "' base_lr: " << c.base_lr << " momentum: " << c.momentum
    << " momentum2: " << c.momentum2 << " delta: " << c.delta << " rms_decay: " << c.rms_decay
    << " weight_decay: " << c.weight_decay << " regularization_type: '" << c.regularization
    << "' clip_gradients: " << c.clip << " iter_size: " << c.iter_size << " lr_policy: '"
    << c.policy << "' gamma: " << c.gamma << " stepsize: " << c.stepsize
    << " max_iter: 100 display: 0 snapshot_after_train: false random_seed: 5 "
    << "net_param { name: 'lsq' "
    << "layer { name: 'data' type: 'TestSequenceData' top: 'x' top: 'y' } "
    << "layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'out' "
    << "  param { lr_mult: " << c.weight_lr << " decay_mult: " << c.weight_decay_mult << " } "
    << "  param { lr_mult: " << c.bias_lr << " decay_mult: " << c.bias_decay_mult << " } "
    << "  inner_product_param { num_output: 1 weight_filler { type: 'gaussian' std: 1 } "
    << "                        bias_filler { type: 'gaussian' std: 1 } } } "
    << "layer { name: 'loss' type: 'EuclideanLoss' bottom: 'out' bottom: 'y' top: 'loss' } }";
  return s.str();
}

// The reference optimiser: theta = [w_0 .. w_{kDim-1}, b], all in double.
struct Reference {
  Config c;
  std::vector<double> theta;
  std::vector<double> h1 = std::vector<double>(kDim + 1, 0.0);
  std::vector<double> h2 = std::vector<double>(kDim + 1, 0.0);
  int iter = 0;
  int cursor = 0;
  int clipped = 0;

  double Rate() const {
    double rate = c.base_lr;
    if (c.policy == "step") rate *= std::pow(c.gamma, iter / c.stepsize);
    return rate;
  }

  void Step() {
    std::vector<double> grad(kDim + 1, 0.0);
    for (int pass = 0; pass < c.iter_size; ++pass) {
      for (int n = 0; n < kBatch; ++n, ++cursor) {
        const int row = cursor % kRows;
        double out = theta[kDim];
        for (int d = 0; d < kDim; ++d) out += theta[d] * Data().x[row][d];
        // d/dtheta of sum_n (out_n - y_n)^2 / (2 * batch)
        const double residual = (out - Data().y[row]) / kBatch;
        for (int d = 0; d < kDim; ++d) grad[d] += residual * Data().x[row][d];
        grad[kDim] += residual;
      }
    }
    if (c.clip >= 0) {
      double sumsq = 0;
      for (double g : grad) sumsq += g * g;
      const double norm = std::sqrt(sumsq);
      if (norm > c.clip) {
        ++clipped;
        for (double& g : grad) g *= c.clip / norm;
      }
    }
    const double rate = Rate();
    for (int j = 0; j <= kDim; ++j) {
      const bool is_bias = j == kDim;
      double g = grad[j] / c.iter_size;
      const double decay = c.weight_decay * (is_bias ? c.bias_decay_mult : c.weight_decay_mult);
      if (c.regularization == "L2") {
        g += decay * theta[j];
      } else {
        g += decay * ((theta[j] > 0) - (theta[j] < 0));
      }
      const double lr = rate * (is_bias ? c.bias_lr : c.weight_lr);
      double step = 0;
      if (c.type == "SGD") {
        h1[j] = c.momentum * h1[j] + lr * g;
        step = h1[j];
      } else if (c.type == "Nesterov") {
        const double previous = h1[j];
        h1[j] = c.momentum * h1[j] + lr * g;
        step = (1 + c.momentum) * h1[j] - c.momentum * previous;
      } else if (c.type == "AdaGrad") {
        h1[j] += g * g;
        step = lr * g / (std::sqrt(h1[j]) + c.delta);
      } else if (c.type == "RMSProp") {
        h1[j] = c.rms_decay * h1[j] + (1 - c.rms_decay) * g * g;
        step = lr * g / (std::sqrt(h1[j]) + c.delta);
      } else if (c.type == "AdaDelta") {
        h1[j] = c.momentum * h1[j] + (1 - c.momentum) * g * g;
        const double unscaled = g * std::sqrt((h2[j] + c.delta) / (h1[j] + c.delta));
        h2[j] = c.momentum * h2[j] + (1 - c.momentum) * unscaled * unscaled;
        step = lr * unscaled;
      } else if (c.type == "Adam") {
        const int t = iter + 1;
        h1[j] = c.momentum * h1[j] + (1 - c.momentum) * g;
        h2[j] = c.momentum2 * h2[j] + (1 - c.momentum2) * g * g;
        const double correction =
            std::sqrt(1 - std::pow(c.momentum2, t)) / (1 - std::pow(c.momentum, t));
        step = lr * correction * h1[j] / (std::sqrt(h2[j]) + c.delta);
      }
      theta[j] -= step;
    }
    ++iter;
  }
};

// The SolverParameter and ParamSpec fields are floats: the reference uses the same values.
Config RoundedToFloat(const Config& config) {
  // Through a volatile: GCC 12's vectoriser (-O2 and up) drops the float rounding of
  // neighbouring double -> float -> double conversions of struct fields.
  const auto f = [](double value) {
    volatile float rounded = static_cast<float>(value);
    return static_cast<double>(rounded);
  };
  Config c = config;
  c.base_lr = f(c.base_lr);
  c.momentum = f(c.momentum);
  c.momentum2 = f(c.momentum2);
  c.delta = f(c.delta);
  c.rms_decay = f(c.rms_decay);
  c.weight_decay = f(c.weight_decay);
  c.clip = f(c.clip);
  c.weight_lr = f(c.weight_lr);
  c.weight_decay_mult = f(c.weight_decay_mult);
  c.bias_lr = f(c.bias_lr);
  c.bias_decay_mult = f(c.bias_decay_mult);
  c.gamma = f(c.gamma);
  return c;
}

// Every solver type with its usual hyper-parameters, then one feature at a time, then all.
std::vector<Config> Configs() {
  std::vector<Config> configs;
  for (const std::string type : {"SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"}) {
    Config base;
    base.type = type;
    base.name = "plain";
    const bool has_momentum = type == "SGD" || type == "Nesterov";
    if (type == "Nesterov") base.momentum = 0.9;
    if (type == "AdaDelta") {
      base.base_lr = 1.0;
      base.momentum = 0.95;
      base.delta = 1e-6;
    }
    if (type == "Adam") {
      base.base_lr = 0.05;
      base.momentum = 0.9;
    }
    if (type == "RMSProp") base.rms_decay = 0.9;
    configs.push_back(base);
    if (has_momentum) {
      Config c = base;
      c.name = "momentum 0.5";
      c.momentum = 0.5;
      configs.push_back(c);
    }
    Config l2 = base;
    l2.name = "L2 weight decay";
    l2.weight_decay = 0.05;
    if (has_momentum) l2.momentum = 0.9;
    configs.push_back(l2);
    Config l1 = base;
    l1.name = "L1 weight decay";
    l1.weight_decay = 0.05;
    l1.regularization = "L1";
    configs.push_back(l1);
    Config clip = base;
    clip.name = "clip_gradients";
    clip.clip = 0.1;
    configs.push_back(clip);
    Config iter_size = base;
    iter_size.name = "iter_size 3";
    iter_size.iter_size = 3;
    configs.push_back(iter_size);
    Config mults = base;
    mults.name = "lr_mult and decay_mult";
    mults.weight_decay = 0.05;
    mults.weight_lr = 2;
    mults.weight_decay_mult = 0.5;
    mults.bias_lr = 0.5;
    mults.bias_decay_mult = 0;
    configs.push_back(mults);
    Config step = base;
    step.name = "step lr policy";
    step.policy = "step";
    step.gamma = 0.5;
    step.stepsize = 2;
    configs.push_back(step);
    Config all = mults;
    all.name = "everything";
    all.regularization = "L1";
    all.clip = 0.2;
    all.iter_size = 2;
    all.policy = "step";
    all.gamma = 0.5;
    all.stepsize = 3;
    if (has_momentum) all.momentum = 0.8;
    configs.push_back(all);
  }
  return configs;
}

template <typename Dtype>
class SolverUpdateTest : public ::testing::Test {};
TYPED_TEST_SUITE(SolverUpdateTest, TestDtypes);

TYPED_TEST(SolverUpdateTest, MatchesHandComputedReference) {
  using Dtype = TypeParam;
  const double tolerance = sizeof(Dtype) == 4 ? 2e-5 : 1e-11;
  constexpr int kSteps = 6;
  for (const Config& config : Configs()) {
    SCOPED_TRACE(config.type + ", " + config.name);
    auto solver =
        SolverRegistry<Dtype>::CreateSolver(ParseText<SolverParameter>(SolverText(config)));
    ASSERT_EQ(std::string(solver->type()), config.type);
    auto ip = solver->net()->layer_by_name("ip");
    ASSERT_EQ(ip->blobs().size(), 2u);
    Reference reference;
    reference.c = RoundedToFloat(config);
    for (int d = 0; d < kDim; ++d) reference.theta.push_back(ip->blobs()[0]->cpu_data()[d]);
    reference.theta.push_back(ip->blobs()[1]->cpu_data()[0]);
    for (int step = 0; step < kSteps; ++step) {
      solver->Step(1);
      reference.Step();
      for (int j = 0; j <= kDim; ++j) {
        const Dtype actual =
            j < kDim ? ip->blobs()[0]->cpu_data()[j] : ip->blobs()[1]->cpu_data()[0];
        EXPECT_NEAR(actual, reference.theta[j], tolerance * (1 + std::fabs(reference.theta[j])))
            << "parameter " << j << " after step " << step + 1;
      }
    }
    EXPECT_EQ(solver->iter(), kSteps);
    if (config.clip >= 0) EXPECT_GT(reference.clipped, 0) << "clipping never triggered";
  }
}

TYPED_TEST(SolverUpdateTest, HistoryHasOneOrTwoBlobsPerParameter) {
  for (const std::string type : {"SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"}) {
    Config config;
    config.type = type;
    auto solver =
        SolverRegistry<TypeParam>::CreateSolver(ParseText<SolverParameter>(SolverText(config)));
    auto* sgd = dynamic_cast<SGDSolver<TypeParam>*>(solver.get());
    ASSERT_NE(sgd, nullptr);
    const std::size_t params = solver->net()->learnable_params().size();
    EXPECT_EQ(sgd->history().size(), (type == "AdaDelta" || type == "Adam" ? 2 : 1) * params)
        << type;
  }
}

TYPED_TEST(SolverUpdateTest, LossDecreasesForEverySolver) {
  for (const std::string type : {"SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"}) {
    Config config;
    config.type = type;
    config.base_lr = type == "AdaDelta" ? 1.0 : 0.05;
    if (type == "SGD" || type == "Nesterov" || type == "Adam") config.momentum = 0.9;
    if (type == "AdaDelta") {
      config.momentum = 0.95;
      config.delta = 1e-3;
    }
    auto solver =
        SolverRegistry<TypeParam>::CreateSolver(ParseText<SolverParameter>(SolverText(config)));
    // The mean loss over a full cycle of the table, before and after training.
    auto cycle_loss = [&] {
      TypeParam total = 0;
      for (int i = 0; i < kRows; ++i) {
        TypeParam loss = 0;
        solver->net()->Forward(&loss);
        total += loss;
      }
      return total / kRows;
    };
    const TypeParam before = cycle_loss();
    solver->Step(200);
    const TypeParam after = cycle_loss();
    EXPECT_LT(after, before * 0.2) << type;
  }
}

}  // namespace
}  // namespace doppio
