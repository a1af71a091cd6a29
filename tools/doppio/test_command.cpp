// doppio test: scores a trained model over --iterations batches and prints every output
// averaged over them.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <sstream>

#include "command.hpp"
#include "common_flags.hpp"
#include "doppio/core/activation_sharing.hpp"
#include "doppio/core/net.hpp"
#include "doppio/solvers/weights.hpp"
#include "doppio/util/io.hpp"
#include "memory_report.hpp"

namespace doppio {
namespace {

int Test() {
  DOPPIO_ENSURE(!FLAGS_model.empty()) << "test: --model is required (the net prototxt to score)";
  DOPPIO_ENSURE(!FLAGS_weights.empty()) << "test: --weights is required (the .caffemodel to score)";
  DOPPIO_ENSURE(FLAGS_iterations > 0) << "test: --iterations must be > 0, not " << FLAGS_iterations;
  std::shared_ptr<GpuContext> gpu = GpuFromFlags();

  NetParameter net_param = ReadNetParamsFromTextFile(FLAGS_model);
  NetState* state = net_param.mutable_state();
  state->set_phase(PhaseFromFlag(TEST));
  state->set_level(FLAGS_level);
  state->clear_stage();
  for (const std::string& stage : StagesFromFlag()) state->add_stage(stage);
  Net<float> net(net_param, 1701, gpu, CpuOptionsFromFlags());
  LoadNetWeights(&net, FLAGS_weights);
  ShareActivationMemory(&net);
  LOG(INFO) << "Running for " << FLAGS_iterations << " iterations.";

  std::vector<double> scores;
  std::vector<int> score_output_ids;
  double loss = 0;
  for (int i = 0; i < FLAGS_iterations; ++i) {
    float iter_loss = 0;
    const auto& outputs = net.Forward(&iter_loss);
    loss += iter_loss;
    int index = 0;
    for (std::size_t j = 0; j < outputs.size(); ++j) {
      const float* values = outputs[j]->cpu_data();
      const std::string& name = net.blob_names()[net.output_blob_indices()[j]];
      for (int k = 0; k < outputs[j]->count(); ++k, ++index) {
        if (i == 0) {
          scores.push_back(values[k]);
          score_output_ids.push_back(static_cast<int>(j));
        } else {
          scores[index] += values[k];
        }
        LOG(INFO) << "Batch " << i << ", " << name << " = " << values[k];
      }
    }
  }
  loss /= FLAGS_iterations;
  LOG(INFO) << "Loss: " << loss;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const int blob_index = net.output_blob_indices()[score_output_ids[i]];
    const std::string& name = net.blob_names()[blob_index];
    const float loss_weight = net.blob_loss_weights()[blob_index];
    const double mean_score = scores[i] / FLAGS_iterations;
    std::ostringstream loss_message;
    if (loss_weight) {
      loss_message << " (* " << loss_weight << " = " << loss_weight * mean_score << " loss)";
    }
    LOG(INFO) << name << " = " << mean_score << loss_message.str();
  }
  LogMemoryReport({&net}, gpu.get());
  return 0;
}

}  // namespace
}  // namespace doppio

DOPPIO_REGISTER_COMMAND(test, "score a model", doppio::Test);
