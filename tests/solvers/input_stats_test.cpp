// The input pipeline's counters (Layer::input_stats, Net::input_stats) and the training log
// line that reports them, with a prefetching layer whose fill takes a known time.
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include "doppio/core/layer_registry.hpp"
#include "doppio/layers/base_data_layer.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/io.hpp"
#include "log_capture.hpp"
#include "test_util.hpp"

namespace doppio {

// Batches of data_param.batch_size records of one value each (label the value), each
// batch taking data_param.rand_skip milliseconds to fill.
template <typename Dtype>
class SlowDataLayer : public BasePrefetchingDataLayer<Dtype> {
 public:
  explicit SlowDataLayer(const LayerParameter& param) : BasePrefetchingDataLayer<Dtype>(param) {}
  ~SlowDataLayer() override { this->StopPrefetching(); }
  const char* type() const override { return "SlowData"; }

 protected:
  typename BasePrefetchingDataLayer<Dtype>::ReaderFields Reader() const override {
    const DataParameter& p = this->layer_param_.data_param();
    return {"data_param", p.has_batch_size(), p.batch_size(), "data_param", 0, 1, false, 0};
  }
  std::vector<int> DataLayerSetUp() override {
    this->batches_per_epoch_ = 1;
    this->StreamFrom(0);
    return {1, 1, 1};
  }
  void LoadBatch(Batch<Dtype>* batch) override {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(this->layer_param_.data_param().rand_skip()));
    batch->data.Reshape({this->batch_size_, 1, 1, 1});
    batch->label.Reshape({this->batch_size_});
    for (int i = 0; i < this->batch_size_; ++i) {
      batch->data.mutable_cpu_data()[i] = static_cast<Dtype>(i % 3);
      batch->label.mutable_cpu_data()[i] = static_cast<Dtype>(i % 3);
    }
  }
  void RestartStreamAt(std::uint64_t position) override {}
};
DOPPIO_INSTANTIATE_CLASS(SlowDataLayer);
REGISTER_LAYER_CLASS(SlowData);

namespace {

std::string SlowNet(int fill_ms, int batch = 4) {
  return "name: 'slow' layer { name: 'data' type: 'SlowData' top: 'x' top: 'y' data_param { "
         "batch_size: " +
         std::to_string(batch) + " rand_skip: " + std::to_string(fill_ms) +
         " prefetch: 2 } } "
         "layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'out' inner_product_param { "
         "num_output: 1 weight_filler { type: 'constant' value: 0.5 } } } "
         "layer { name: 'loss' type: 'EuclideanLoss' bottom: 'out' bottom: 'y' top: 'loss' }";
}

template <typename Dtype>
class InputStatsTest : public ::testing::Test {};
TYPED_TEST_SUITE(InputStatsTest, TestDtypes);

TYPED_TEST(InputStatsTest, ASlowFillMakesTheForwardWaitAndAReadyBatchDoesNot) {
  Net<TypeParam> net(ReadNetParamsFromTextString(SlowNet(60), "test"), 1701);
  // Three Forwards at once: each waits for its batch, about 60 ms each.
  for (int i = 0; i < 3; ++i) net.Forward();
  const InputStats slow = net.input_stats();
  EXPECT_EQ(slow.batches, 3u);
  EXPECT_GE(slow.waits, 1u);
  EXPECT_GT(slow.wait_seconds, 0.06);
  // The fill's own time, not the consumer's: 4 records in 60 ms at most about 67 records/s.
  ASSERT_GE(slow.records, 12u);
  EXPECT_GE(slow.fill_seconds, 0.06 * slow.records / 4);
  EXPECT_LT(slow.records / slow.fill_seconds, 70.0);
  // Given the time to fill the prefetch queue (two batches), the next Forward finds one ready.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  net.Forward();
  const InputStats ready = net.input_stats() - slow;
  EXPECT_EQ(ready.batches, 1u);
  EXPECT_EQ(ready.waits, 0u);
  EXPECT_EQ(ready.wait_seconds, 0.0);
}

TYPED_TEST(InputStatsTest, TheRateLineAddsTheInputRateAndTheWaitsAndStaysParseable) {
  LogCapture log(google::INFO);
  SolverParameter param = ParseText<SolverParameter>(
      "base_lr: 0.01 lr_policy: 'fixed' max_iter: 6 display: 2 snapshot_after_train: false "
      "net_param { " +
      SlowNet(30) + " }");
  auto solver = SolverRegistry<TypeParam>::CreateSolver(param);
  solver->Solve();
  // Caffe's parse_log.py and tools/plot_training_log read the same lines as before.
  const std::regex rate(
      R"(^Iteration (\d+) \(([\d.]+) iter/s, ([\d.]+) images/s, ETA \d+:\d\d:\d\d\))"
      R"(; input ([\d.]+) records/s(; step waited for data ([\d.]+) ms in (\d+) of (\d+) batches)?$)");
  const std::regex loss(R"(Iteration (\d+)(?: \([^)]*\))?, loss = ([\.\deE+-]+))");
  int rate_lines = 0, waited_lines = 0, loss_lines = 0;
  for (const std::string& line : log.lines) {
    std::smatch match;
    loss_lines += std::regex_search(line, loss) ? 1 : 0;
    if (!std::regex_search(line, match, rate)) continue;
    ++rate_lines;
    // The fill makes 4 records in 30 ms: at most about 133 records/s.
    EXPECT_GT(std::stod(match[4]), 0.0) << line;
    EXPECT_LT(std::stod(match[4]), 140.0) << line;
    if (match[5].matched) {
      ++waited_lines;
      EXPECT_GT(std::stod(match[6]), 0.0) << line;
      EXPECT_LE(std::stoi(match[7]), std::stoi(match[8])) << line;
      EXPECT_EQ(std::stoi(match[8]), 2) << line;  // one batch per iteration, 2 per display
    }
  }
  EXPECT_EQ(rate_lines, 2) << log.text();  // iterations 2 and 4 (0 has no interval)
  // The step outruns a 30 ms fill: it waits in every interval.
  EXPECT_EQ(waited_lines, 2) << log.text();
  EXPECT_EQ(loss_lines, 4) << log.text();  // iterations 0, 2, 4 and 6
}

}  // namespace
}  // namespace doppio
