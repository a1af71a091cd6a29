#include "doppio/solvers/solver.hpp"

#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <map>
#include <random>
#include <sstream>

#include "doppio/core/activation_sharing.hpp"
#include "doppio/solvers/larc.hpp"
#include "doppio/solvers/lr_policy.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/solvers/weights.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/snapshot_files.hpp"

namespace doppio {

namespace {

// Prefixes an Error raised while reading a file the solver names with the field naming it.
template <typename Function>
auto WithContext(const std::string& context, Function&& function) -> decltype(function()) {
  try {
    return function();
  } catch (const Error& error) {
    throw Error(context + ": " + error.what(), error.code());
  }
}

template <typename Value>
bool AllFinite(int count, const Value* values) {
  for (int i = 0; i < count; ++i) {
    if (!std::isfinite(values[i])) return false;
  }
  return true;
}

bool BlobProtoIsFinite(const BlobProto& blob) {
  return AllFinite(blob.data_size(), blob.data().data()) &&
         AllFinite(blob.diff_size(), blob.diff().data()) &&
         AllFinite(blob.double_data_size(), blob.double_data().data()) &&
         AllFinite(blob.double_diff_size(), blob.double_diff().data());
}

// "layer 'conv1' (Convolution)" ('loss#20' where layers share the name).
template <typename Dtype>
std::string LayerName(const Net<Dtype>& net, int layer) {
  return "layer '" + net.layer_label(layer) + "' (" + net.layers()[layer]->type() + ")";
}

// "param #0 of layer 'conv1' (Convolution)" for one of the net's parameter blobs.
template <typename Dtype>
std::string ParamName(const Net<Dtype>& net, const Blob<Dtype>* param) {
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    const auto& blobs = net.layers()[i]->blobs();
    for (std::size_t k = 0; k < blobs.size(); ++k) {
      if (blobs[k].get() == param) {
        return "param #" + std::to_string(k) + " of " + LayerName(net, static_cast<int>(i));
      }
    }
  }
  return "a parameter";
}

// Caffe's HDF5 weights hold one layer per name: say so at set-up, not at the first snapshot.
template <typename Dtype>
void CheckHdf5CanHoldWeights(const Net<Dtype>& net) {
  std::map<std::string, int> with_weights;
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    if (net.layers()[i]->blobs().empty()) continue;
    DOPPIO_ENSURE(++with_weights[net.layer_names()[i]] == 1)
        << "solver: snapshot_format HDF5 cannot hold net '" << net.name() << "': two layers named '"
        << net.layer_names()[i] << "' have weights, and Caffe's HDF5 layout holds one layer per "
        << "name; rename one, or use snapshot_format: BINARYPROTO";
  }
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  long total = static_cast<long>(seconds + 0.5);
  char text[64];
  std::snprintf(text, sizeof(text), "%ld:%02ld:%02ld", total / 3600, (total / 60) % 60, total % 60);
  return text;
}

// The input pipeline over one display interval, for the rate line: what its filling
// produces while busy (its capacity, above the consumption rate when the input keeps up), and
// how long the step waited for it. Empty for a net without such layers.
std::string DescribeInput(const InputStats& interval) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1);
  if (interval.fill_seconds > 0) {
    text << "; input " << interval.records / interval.fill_seconds << " records/s";
  }
  if (interval.waits > 0) {
    text << "; step waited for data " << interval.wait_seconds * 1e3 << " ms in " << interval.waits
         << " of " << interval.batches << " batches";
  }
  return text.str();
}

}  // namespace

bool ScalesLoss(const SolverParameter& param) {
  return param.loss_scaling() == SolverParameter::DYNAMIC_LOSS_SCALING ||
         (param.loss_scaling() == SolverParameter::LOSS_SCALING_DEFAULT &&
          param.precision() == FP16);
}

template <typename Dtype>
Solver<Dtype>::Solver(const SolverParameter& param, std::shared_ptr<GpuContext> gpu,
                      const CpuOptions& cpu)
    : param_(param), gpu_(std::move(gpu)), cpu_options_(cpu) {
  if (param_.has_solver_type()) {
    const std::string old_type = SolverParameter::SolverType_Name(param_.solver_type());
    UpgradeSolverType(&param_);
    LOG(INFO) << "Upgraded Caffe's old solver_type: " << old_type << " to type: \"" << param_.type()
              << "\" (`doppio upgrade_solver` writes the upgraded file)";
  }
  CheckParameters();
  CheckSnapshotWritePermissions();
  loss_scaling_ = ScalesLoss(param_);
  if (loss_scaling_) {
    loss_scale_ = param_.loss_scale();
    LOG(INFO) << "Dynamic loss scaling from " << loss_scale_ << " (halved on an overflow, doubled "
              << "after " << param_.loss_scale_window() << " clean updates, at least "
              << param_.loss_scale_min() << ")";
  }
  if (param_.random_seed() >= 0) {
    seed_ = static_cast<std::uint64_t>(param_.random_seed());
  } else {
    // Caffe's meaning of random_seed -1: a fresh seed every run.
    std::random_device device;
    seed_ = (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }
  LOG(INFO) << "Initializing solver from parameters:\n" << param_.DebugString();
  InitTrainNet();
  if (param_.snapshot_format() == SolverParameter::HDF5) CheckHdf5CanHoldWeights(*net_);
  InitTestNets();
  LOG(INFO) << "Solver scaffolding done.";
}

template <typename Dtype>
void Solver<Dtype>::CheckParameters() const {
  CheckLearningRatePolicy(param_);
  DOPPIO_ENSURE(param_.iter_size() >= 1)
      << "solver: iter_size must be >= 1, not " << param_.iter_size();
  DOPPIO_ENSURE(param_.average_loss() >= 1)
      << "solver: average_loss must be >= 1, not " << param_.average_loss();
  DOPPIO_ENSURE(param_.display() >= 0) << "solver: display must be >= 0, not " << param_.display();
  DOPPIO_ENSURE(param_.max_iter() >= 0)
      << "solver: max_iter must be >= 0, not " << param_.max_iter();
  DOPPIO_ENSURE(param_.test_interval() >= 0)
      << "solver: test_interval must be >= 0, not " << param_.test_interval();
  DOPPIO_ENSURE(param_.snapshot() >= 0)
      << "solver: snapshot must be >= 0, not " << param_.snapshot();
  for (int i = 0; i < param_.test_iter_size(); ++i) {
    DOPPIO_ENSURE(param_.test_iter(i) >= 0)
        << "solver: test_iter #" << i << " must be >= 0, not " << param_.test_iter(i);
  }
  DOPPIO_ENSURE(param_.regularization_type() == "L2" || param_.regularization_type() == "L1")
      << "solver: unknown regularization_type '" << param_.regularization_type()
      << "'; known types: L1 L2";
  DOPPIO_ENSURE(param_.base_lr() >= 0) << "solver: base_lr must be >= 0, not " << param_.base_lr();
  DOPPIO_ENSURE(!param_.has_reference_batch() || param_.reference_batch() > 0)
      << "solver: reference_batch must be positive, not " << param_.reference_batch();
  CheckLarcParameters(param_);
  DOPPIO_ENSURE(std::isfinite(param_.loss_scale()) && param_.loss_scale() > 0)
      << "solver: loss_scale must be positive and finite, not " << param_.loss_scale();
  DOPPIO_ENSURE(param_.loss_scale_window() >= 1)
      << "solver: loss_scale_window must be >= 1, not " << param_.loss_scale_window();
  DOPPIO_ENSURE(param_.loss_scale_min() > 0 && param_.loss_scale_min() <= param_.loss_scale())
      << "solver: loss_scale_min must be positive and at most loss_scale (" << param_.loss_scale()
      << "), not " << param_.loss_scale_min();
}

template <typename Dtype>
void Solver<Dtype>::CheckSnapshotWritePermissions() const {
  if (param_.snapshot() == 0 && !param_.snapshot_after_train()) return;
  // Fail now rather than after hours of training: write and remove a probe file next to
  // where the snapshots will go.
  std::filesystem::path prefix(param_.snapshot_prefix());
  std::filesystem::path directory = prefix.parent_path();
  if (directory.empty()) directory = ".";
  std::string probe =
      (directory / (prefix.filename().string() + ".doppio-write-test-XXXXXX")).string();
  int fd = mkstemp(probe.data());
  if (fd < 0) {
    const int error = errno;
    DOPPIO_FAIL() << "solver: cannot write snapshots to directory '" << directory.string()
                  << "' (snapshot_prefix '" << param_.snapshot_prefix()
                  << "'): " << std::strerror(error);
  }
  close(fd);
  unlink(probe.c_str());
}

template <typename Dtype>
void Solver<Dtype>::InitTrainNet() {
  const int num_train_nets = param_.has_net() + param_.has_net_param() + param_.has_train_net() +
                             param_.has_train_net_param();
  DOPPIO_ENSURE(num_train_nets >= 1)
      << "solver: no training net; set one of net, net_param, train_net or train_net_param";
  DOPPIO_ENSURE(num_train_nets == 1)
      << "solver: give only one of net, net_param, train_net and train_net_param ("
      << num_train_nets << " are set)";
  NetParameter net_param;
  if (param_.has_train_net_param()) {
    LOG(INFO) << "Creating training net specified in train_net_param.";
    net_param = param_.train_net_param();
  } else if (param_.has_train_net()) {
    LOG(INFO) << "Creating training net from train_net file: " << param_.train_net();
    net_param = WithContext("solver field train_net",
                            [&] { return ReadNetParamsFromTextFile(param_.train_net()); });
  } else if (param_.has_net_param()) {
    LOG(INFO) << "Creating training net specified in net_param.";
    net_param = param_.net_param();
  } else {
    LOG(INFO) << "Creating training net from net file: " << param_.net();
    net_param =
        WithContext("solver field net", [&] { return ReadNetParamsFromTextFile(param_.net()); });
  }
  // The phase is TRAIN unless the net's own state says otherwise; train_state wins.
  NetState state;
  state.set_phase(TRAIN);
  state.MergeFrom(net_param.state());
  state.MergeFrom(param_.train_state());
  *net_param.mutable_state() = state;
  if (param_.precision() != PRECISION_DEFAULT) net_param.set_precision(param_.precision());
  net_ = std::make_shared<Net<Dtype>>(net_param, seed_, gpu_, cpu_options_);
  net_debug_info_ = net_param.debug_info();
  for (const std::string& weights : param_.weights()) LoadNetWeights(net_.get(), weights);
}

namespace {

// A test that runs more batches than one pass over its data scores records repeatedly (as
// in Caffe, the readers wrap around): harmless but slow when the passes are whole, a
// biased score when they are not. Either way the user should know.
template <typename Dtype>
void NoteRepeatedTestRecords(const Net<Dtype>& net, int test_net_id, int test_iter) {
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    const std::uint64_t pass = net.layers()[i]->batches_per_epoch();
    if (pass == 0) continue;
    const std::uint64_t batches = static_cast<std::uint64_t>(test_iter);
    if (batches <= pass) continue;
    std::ostringstream text;
    text << "Test net #" << test_net_id << " runs " << batches << " batches per test here, but one "
         << "pass over the data of layer '" << net.layer_label(static_cast<int>(i)) << "' takes "
         << pass << ": ";
    if (batches % pass == 0) {
      LOG(INFO) << text.str() << "every record is scored " << batches / pass
                << " times (the same score as test_iter " << pass << ", at " << batches / pass
                << " times the cost)";
    } else {
      LOG(WARNING) << text.str() << "some records are scored more often than others, which "
                   << "biases the score; make test_iter a multiple of " << pass;
    }
  }
}

}  // namespace

template <typename Dtype>
void Solver<Dtype>::InitTestNets() {
  const bool has_generic_net = param_.has_net() || param_.has_net_param();
  const int num_test_net_params = param_.test_net_param_size();
  const int num_test_net_files = param_.test_net_size();
  const int num_test_nets = num_test_net_params + num_test_net_files;
  if (has_generic_net) {
    DOPPIO_ENSURE(param_.test_iter_size() >= num_test_nets)
        << "solver: test_iter must be given for each test net (" << num_test_nets << " test nets, "
        << param_.test_iter_size() << " test_iter entries)";
  } else {
    DOPPIO_ENSURE(param_.test_iter_size() == num_test_nets)
        << "solver: test_iter must be given for each test net (" << num_test_nets << " test nets, "
        << param_.test_iter_size() << " test_iter entries)";
  }
  // The generic net is instantiated once for each test_iter beyond the explicit test nets.
  const int num_generic_instances = param_.test_iter_size() - num_test_nets;
  const int num_instances = num_test_nets + num_generic_instances;
  if (param_.test_state_size() > 0) {
    DOPPIO_ENSURE(param_.test_state_size() == num_instances)
        << "solver: test_state must be given for each test net (" << num_instances << " test nets, "
        << param_.test_state_size() << " test_state entries)";
  }
  if (num_instances > 0 && param_.test_interval() == 0) {
    LOG(WARNING) << "test_interval is 0: the " << num_instances << " test net(s) will not run";
  }
  std::vector<std::string> sources(num_instances);
  std::vector<NetParameter> net_params(num_instances);
  int id = 0;
  for (int i = 0; i < num_test_net_params; ++i, ++id) {
    sources[id] = "test_net_param";
    net_params[id] = param_.test_net_param(i);
  }
  for (int i = 0; i < num_test_net_files; ++i, ++id) {
    sources[id] = "test_net file: " + param_.test_net(i);
    net_params[id] = WithContext("solver field test_net #" + std::to_string(i),
                                 [&] { return ReadNetParamsFromTextFile(param_.test_net(i)); });
  }
  for (int i = 0; i < num_generic_instances; ++i, ++id) {
    if (param_.has_net()) {
      sources[id] = "net file: " + param_.net();
      net_params[id] =
          WithContext("solver field net", [&] { return ReadNetParamsFromTextFile(param_.net()); });
    } else {
      sources[id] = "net_param";
      net_params[id] = param_.net_param();
    }
  }
  test_nets_.resize(num_instances);
  for (int i = 0; i < num_instances; ++i) {
    NetState state;
    state.set_phase(TEST);
    state.MergeFrom(net_params[i].state());
    if (param_.test_state_size() > 0) state.MergeFrom(param_.test_state(i));
    *net_params[i].mutable_state() = state;
    if (param_.precision() != PRECISION_DEFAULT) net_params[i].set_precision(param_.precision());
    LOG(INFO) << "Creating test net (#" << i << ") specified by " << sources[i];
    test_nets_[i] =
        std::make_shared<Net<Dtype>>(net_params[i], DeriveSeed(seed_, i + 1), gpu_, cpu_options_);
    for (const std::string& weights : param_.weights()) {
      LoadNetWeights(test_nets_[i].get(), weights);
    }
    if (i < param_.test_iter_size()) {
      NoteRepeatedTestRecords(*test_nets_[i], i, param_.test_iter(i));
    }
    // Test() reads only the outputs.
    ShareActivationMemory(test_nets_[i].get());
  }
}

template <typename Dtype>
SolverAction Solver<Dtype>::GetRequestedAction() {
  return action_function_ ? action_function_() : SolverAction::NONE;
}

template <typename Dtype>
Dtype Solver<Dtype>::GetLearningRate() {
  return static_cast<Dtype>(LearningRate(param_, iter_, &current_step_));
}

template <typename Dtype>
void Solver<Dtype>::Solve(const std::string& resume_file) {
  LOG(INFO) << "Solving " << net_->name();
  LOG(INFO) << "Learning Rate Policy: " << param_.lr_policy();
  requested_early_exit_ = false;
  if (!resume_file.empty()) {
    LOG(INFO) << "Restoring previous solver status from " << resume_file;
    Restore(resume_file);
  }
  const int start_iter = iter_;
  Step(param_.max_iter() - iter_);
  // Snapshot unless Step has just written one for this iteration (its interval's, or a
  // request's).
  if (param_.snapshot_after_train() && last_snapshot_iter_ != iter_) {
    Snapshot();
  }
  if (requested_early_exit_) {
    LOG(INFO) << "Optimization stopped early.";
    return;
  }
  // The loss after the last update, which Step did not display.
  if (display_now()) {
    Dtype loss = 0;
    net_->Forward(&loss);
    UpdateSmoothedLoss(loss, start_iter, param_.average_loss());
    LOG(INFO) << "Iteration " << iter_ << ", loss = " << smoothed_loss_;
  }
  if (param_.test_interval() && iter_ % param_.test_interval() == 0) TestAll();
  LOG(INFO) << "Optimization Done.";
}

template <typename Dtype>
void Solver<Dtype>::Step(int iters) {
  const int start_iter = iter_;
  const int stop_iter = iter_ + iters;
  const int average_loss = param_.average_loss();
  losses_.clear();
  smoothed_loss_ = 0;
  last_display_time_ = std::chrono::steady_clock::now();
  last_display_iter_ = iter_;
  last_input_stats_ = net_->input_stats();

  while (iter_ < stop_iter) {
    net_->ClearParamDiffs();
    if (param_.test_interval() && iter_ % param_.test_interval() == 0 &&
        (iter_ > 0 || param_.test_initialization())) {
      TestAll();
      if (requested_early_exit_) break;
    }
    for (auto& callbacks : callbacks_) {
      if (callbacks.on_start) callbacks.on_start();
    }
    divergence_.reset();
    // As Caffe: the solver's debug_info logs only on display iterations, or it would drown
    // the log.
    net_->set_debug_info(net_debug_info_ || (param_.debug_info() && display_now()));
    net_->set_loss_scale(loss_scaling_ ? loss_scale_ : Dtype(1));
    Dtype loss = 0;
    for (int i = 0; i < param_.iter_size(); ++i) loss += net_->ForwardBackward();
    loss /= param_.iter_size();
    const bool loss_finite = std::isfinite(static_cast<double>(loss));
    UpdateSmoothedLoss(loss, start_iter, average_loss);
    if (display_now()) DisplayProgress(stop_iter);
    for (auto& callbacks : callbacks_) {
      if (callbacks.on_gradients_ready) callbacks.on_gradients_ready();
    }
    bool apply_update = true;
    for (auto& callbacks : callbacks_) {
      if (callbacks.apply_update && !callbacks.apply_update()) apply_update = false;
    }
    // A non-finite loss is known before the update, which is skipped to keep the weights good;
    // a NaN or infinity only in the gradients (another replica's, through the allreduce) or
    // one the step overflowed into is found by the update itself, in its one pass over the
    // weights, which has already written them: training stops below, before any snapshot.
    // An overflow under loss scaling skips the update and is no divergence: only the scale
    // changes, and the iteration counts.
    if (loss_scaling_ && loss_finite && !UnscaleGradients()) apply_update = false;
    bool weights_finite = true;
    if (apply_update && (loss_finite || allow_nonfinite_)) weights_finite = ApplyUpdate();
    for (auto& callbacks : callbacks_) {
      if (callbacks.on_update_applied) callbacks.on_update_applied();
    }
    NoteNonFinite(loss, weights_finite);
    if (divergence_) {
      // The iteration does not count. The poll still comes first: a coordinating trainer's
      // action function decides there, with its other ranks, that all of them stop.
      GetRequestedAction();
      throw Error(divergence_->message, ExitCode::kDiverged);
    }
    // iter_ counts the updates applied so far.
    ++iter_;

    const SolverAction request = GetRequestedAction();
    if ((param_.snapshot() && iter_ % param_.snapshot() == 0) || Snapshots(request)) Snapshot();
    if (Stops(request)) {
      requested_early_exit_ = true;
      break;
    }
  }
}

template <typename Dtype>
bool Solver<Dtype>::UnscaleGradients() {
  const auto& params = net_->learnable_params();
  // A NaN or infinity anywhere makes its blob's sum of magnitudes one (or so large a sum
  // overflows: gradients that large are an overflow too).
  const bool finite = std::all_of(params.begin(), params.end(), [](const Blob<Dtype>* blob) {
    return std::isfinite(static_cast<double>(blob->asum_diff()));
  });
  if (finite) {
    for (Blob<Dtype>* blob : params) blob->scale_diff(Dtype(1) / loss_scale_);
    if (++loss_scale_clean_updates_ >= param_.loss_scale_window()) {
      loss_scale_ *= 2;
      loss_scale_clean_updates_ = 0;
      LOG(INFO) << "Iteration " << iter_ << ": " << param_.loss_scale_window()
                << " updates without overflow: loss scale " << loss_scale_;
    }
    return true;
  }
  loss_scale_clean_updates_ = 0;
  if (loss_scale_ / 2 < param_.loss_scale_min()) {
    std::ostringstream text;
    text << "Iteration " << iter_ << " (lr = " << GetLearningRate()
         << "): training diverged: the gradients are NaN or infinite at loss scale " << loss_scale_
         << ", which is already at loss_scale_min " << param_.loss_scale_min();
    if (allow_nonfinite_) {
      LOG(WARNING) << text.str() << "; going on without this update (--allow_nonfinite)";
      return false;
    }
    text << ". Stopping; the snapshots written before this iteration are intact (lower "
            "base_lr, or check the data)";
    divergence_ = Divergence{text.str(), false};
    return false;
  }
  loss_scale_ /= 2;
  LOG(INFO) << "Iteration " << iter_ << ": the gradients overflowed at loss scale "
            << loss_scale_ * 2 << ": update skipped, loss scale " << loss_scale_;
  return false;
}

template <typename Dtype>
void Solver<Dtype>::NoteNonFinite(Dtype loss, bool weights_finite) {
  const bool loss_finite = std::isfinite(static_cast<double>(loss));
  if (loss_finite && weights_finite) return;
  Divergence divergence;
  std::ostringstream text;
  text << "Iteration " << iter_ << " (lr = " << GetLearningRate() << "): training diverged: ";
  if (!loss_finite) text << "the loss is " << loss;
  if (!weights_finite)
    text << (loss_finite ? "" : ", and ") << "the update made weights NaN or infinite";
  const std::string where = LocateNonFinite(&divergence.in_forward);
  if (!where.empty()) text << "; the first NaN or infinity is in " << where;
  divergence.message = text.str();
  if (allow_nonfinite_) {
    LOG(WARNING) << divergence.message << "; going on (--allow_nonfinite)";
    return;
  }
  divergence.message +=
      ". Stopping; the snapshots written before this iteration are intact "
      "(lower base_lr, or check the data)";
  divergence_ = std::move(divergence);
}

// Runs only after a NaN or infinity was seen: finds where it first appeared, in the order the
// iteration computed things: the forward outputs, then the gradients in backward order, then
// the weights the update wrote.
template <typename Dtype>
std::string Solver<Dtype>::LocateNonFinite(bool* in_forward) const {
  const Net<Dtype>& net = *net_;
  const int num_layers = static_cast<int>(net.layers().size());
  *in_forward = true;
  for (int i = 0; i < num_layers; ++i) {
    for (std::size_t j = 0; j < net.top_vecs()[i].size(); ++j) {
      const Blob<Dtype>* top = net.top_vecs()[i][j];
      if (top->count() > 0 && !AllFinite(top->count(), top->cpu_data())) {
        return "top blob '" + net.blob_names()[net.top_id_vecs()[i][j]] + "' of " +
               LayerName(net, i);
      }
    }
  }
  *in_forward = false;
  for (int i = num_layers - 1; i >= 0; --i) {
    if (!net.layer_need_backward()[i]) continue;
    const auto& params = net.layers()[i]->blobs();
    for (std::size_t k = 0; k < params.size(); ++k) {
      if (params[k]->count() > 0 && !AllFinite(params[k]->count(), params[k]->cpu_diff())) {
        return "the diff of param #" + std::to_string(k) + " of " + LayerName(net, i);
      }
    }
    for (std::size_t j = 0; j < net.bottom_vecs()[i].size(); ++j) {
      const Blob<Dtype>* bottom = net.bottom_vecs()[i][j];
      if (net.bottom_need_backward()[i][j] && bottom->count() > 0 &&
          !AllFinite(bottom->count(), bottom->cpu_diff())) {
        return "the diff of bottom blob '" + net.blob_names()[net.bottom_id_vecs()[i][j]] +
               "' of " + LayerName(net, i);
      }
    }
  }
  for (const Blob<Dtype>* param : net.learnable_params()) {
    if (param->count() > 0 && !AllFinite(param->count(), param->cpu_data())) {
      return "the weights of " + ParamName(net, param) + ", which overflowed in the update";
    }
  }
  return "";
}

template <typename Dtype>
void Solver<Dtype>::DisplayProgress(int stop_iter) {
  LOG(INFO) << "Iteration " << iter_ << ", loss = " << smoothed_loss_;
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - last_display_time_).count();
  const int iterations = iter_ - last_display_iter_;
  const InputStats input = net_->input_stats();
  if (iterations > 0 && seconds > 0) {
    const double iters_per_second = iterations / seconds;
    // Images per iteration: the batch (first axis) of the first data layer's first top.
    int batch = 0;
    const auto& layers = net_->layers();
    for (std::size_t i = 0; i < layers.size() && batch == 0; ++i) {
      if (net_->bottom_vecs()[i].empty() && !net_->top_vecs()[i].empty() &&
          net_->top_vecs()[i][0]->num_axes() > 0) {
        batch = net_->top_vecs()[i][0]->shape(0);
      }
    }
    std::ostringstream line;
    line << std::fixed << std::setprecision(iters_per_second < 10 ? 3 : 1);
    line << "Iteration " << iter_ << " (" << iters_per_second << " iter/s, " << std::setprecision(1)
         << iters_per_second * batch * param_.iter_size() << " images/s, ETA "
         << FormatDuration((stop_iter - iter_) / iters_per_second) << ")"
         << DescribeInput(input - last_input_stats_);
    LOG(INFO) << line.str();
  }
  last_display_time_ = now;
  last_display_iter_ = iter_;
  last_input_stats_ = input;
  const auto& outputs = net_->output_blobs();
  int score_index = 0;
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    const Dtype* values = outputs[j]->cpu_data();
    const int blob_index = net_->output_blob_indices()[j];
    const std::string& name = net_->blob_names()[blob_index];
    const Dtype loss_weight = net_->blob_loss_weights()[blob_index];
    for (int k = 0; k < outputs[j]->count(); ++k) {
      std::ostringstream loss_message;
      if (loss_weight) {
        loss_message << " (* " << loss_weight << " = " << loss_weight * values[k] << " loss)";
      }
      LOG(INFO) << "    Train net output #" << score_index++ << ": " << name << " = " << values[k]
                << loss_message.str();
    }
  }
}

template <typename Dtype>
void Solver<Dtype>::UpdateSmoothedLoss(Dtype loss, int start_iter, int average_loss) {
  if (static_cast<int>(losses_.size()) < average_loss) {
    losses_.push_back(loss);
    const int size = static_cast<int>(losses_.size());
    smoothed_loss_ = (smoothed_loss_ * (size - 1) + loss) / size;
  } else {
    const int index = (iter_ - start_iter) % average_loss;
    smoothed_loss_ += (loss - losses_[index]) / average_loss;
    losses_[index] = loss;
  }
}

template <typename Dtype>
void Solver<Dtype>::TestAll() {
  for (std::size_t i = 0; i < test_nets_.size() && !requested_early_exit_; ++i) {
    Test(static_cast<int>(i));
  }
}

template <typename Dtype>
void Solver<Dtype>::Test(int test_net_id) {
  LOG(INFO) << "Iteration " << iter_ << ", Testing net (#" << test_net_id << ")";
  const auto& test_net = test_nets_[test_net_id];
  test_net->ShareTrainedLayersWith(*net_);
  std::vector<Dtype> scores;
  std::vector<int> score_output_ids;
  Dtype loss = 0;
  const int test_iter = param_.test_iter(test_net_id);
  for (int i = 0; i < test_iter; ++i) {
    for (SolverAction request = GetRequestedAction(); request != SolverAction::NONE;
         request = GetRequestedAction()) {
      if (Snapshots(request)) Snapshot();
      if (Stops(request)) requested_early_exit_ = true;
    }
    if (requested_early_exit_) break;
    Dtype iter_loss = 0;
    const auto& outputs = test_net->Forward(&iter_loss);
    if (param_.test_compute_loss()) loss += iter_loss;
    int index = 0;
    for (std::size_t j = 0; j < outputs.size(); ++j) {
      const Dtype* values = outputs[j]->cpu_data();
      for (int k = 0; k < outputs[j]->count(); ++k, ++index) {
        if (i == 0) {
          scores.push_back(values[k]);
          score_output_ids.push_back(static_cast<int>(j));
        } else {
          scores[index] += values[k];
        }
      }
    }
  }
  if (requested_early_exit_) {
    LOG(INFO) << "Test interrupted.";
    return;
  }
  std::vector<double> means(scores.size());
  for (std::size_t i = 0; i < scores.size(); ++i) means[i] = scores[i] / test_iter;
  const bool report_loss = param_.test_compute_loss() && test_iter > 0;
  if (report_loss) means.push_back(loss / test_iter);
  for (auto& callbacks : callbacks_) {
    if (callbacks.on_test_scores) callbacks.on_test_scores(test_net_id, &means);
  }
  if (report_loss) {
    loss = static_cast<Dtype>(means.back());
    means.pop_back();
    LOG(INFO) << "Test loss: " << loss;
  }
  last_test_scores_.assign(scores.size(), 0);
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const int blob_index = test_net->output_blob_indices()[score_output_ids[i]];
    const std::string& name = test_net->blob_names()[blob_index];
    const Dtype loss_weight = test_net->blob_loss_weights()[blob_index];
    const Dtype mean_score = static_cast<Dtype>(means[i]);
    last_test_scores_[i] = mean_score;
    std::ostringstream loss_message;
    if (loss_weight) {
      loss_message << " (* " << loss_weight << " = " << loss_weight * mean_score << " loss)";
    }
    LOG(INFO) << "    Test net output #" << i << ": " << name << " = " << mean_score
              << loss_message.str();
  }
}

template <typename Dtype>
std::string Solver<Dtype>::SnapshotFilename(const std::string& extension) const {
  return param_.snapshot_prefix() + "_iter_" + std::to_string(iter_) + extension;
}

template <typename Dtype>
void Solver<Dtype>::Snapshot() {
  // Caffe's names: HDF5 snapshots end in .h5, which is how they are read back.
  const bool hdf5 = param_.snapshot_format() == SolverParameter::HDF5;
  const std::string model_filename = SnapshotFilename(hdf5 ? ".caffemodel.h5" : ".caffemodel");
  const std::string state_filename = SnapshotFilename(hdf5 ? ".solverstate.h5" : ".solverstate");
  NetParameter net_param;
  net_->ToProto(&net_param, param_.snapshot_diff());
  SolverState state;
  state.set_iter(iter_);
  state.set_learned_net(model_filename);
  state.set_current_step(current_step_);
  if (loss_scaling_) {
    state.set_loss_scale(static_cast<float>(loss_scale_));
    state.set_loss_scale_clean_updates(loss_scale_clean_updates_);
  }
  SnapshotSolverState(&state);
  SnapshotDataPositions(&state);
  for (auto& callbacks : callbacks_) {
    if (callbacks.on_snapshot) callbacks.on_snapshot(&state);
  }
  if (!allow_nonfinite_) CheckSnapshotIsFinite(net_param, model_filename, state, state_filename);
  // Weights first, then the state that names them: a failure in between leaves the
  // previous .solverstate pointing at the previous, intact weights.
  const char* format = hdf5 ? "HDF5" : "binary proto";
  LOG(INFO) << "Snapshotting to " << format << " file " << model_filename;
  WriteWeightsFile(net_param, model_filename);
  LOG(INFO) << "Snapshotting solver state to " << format << " file " << state_filename;
  WriteSolverStateFile(state, state_filename);
  last_snapshot_iter_ = iter_;
}

// Both files are checked before either is written: no half snapshot is left either.
template <typename Dtype>
void Solver<Dtype>::CheckSnapshotIsFinite(const NetParameter& weights,
                                          const std::string& weights_file, const SolverState& state,
                                          const std::string& state_file) const {
  const char* why =
      " holds NaN or infinity (training diverged); the snapshots written before "
      "are intact (--allow_nonfinite writes it anyway)";
  for (const LayerParameter& layer : weights.layer()) {
    for (int k = 0; k < layer.blobs_size(); ++k) {
      if (BlobProtoIsFinite(layer.blobs(k))) continue;
      throw Error("Iteration " + std::to_string(iter_) + ": refusing to write the snapshot " +
                      weights_file + ": param #" + std::to_string(k) + " of layer '" +
                      layer.name() + "' (" + layer.type() + ")" + why,
                  ExitCode::kDiverged);
    }
  }
  // The file's history is in Caffe's parameter order (SGDSolver::SnapshotSolverState).
  const auto& params = net_->learnable_params();
  const std::vector<int>& arena_ids = net_->arena_ids_in_caffe_order();
  for (int i = 0; i < state.history_size(); ++i) {
    if (BlobProtoIsFinite(state.history(i))) continue;
    const int arena_id = arena_ids[i % arena_ids.size()];
    throw Error("Iteration " + std::to_string(iter_) + ": refusing to write the snapshot " +
                    state_file + ": history blob #" + std::to_string(i) + " (of " +
                    ParamName(*net_, params[arena_id]) + ")" + why,
                ExitCode::kDiverged);
  }
}

template <typename Dtype>
void Solver<Dtype>::ReadSnapshot(const std::string& state_file, SolverState* state,
                                 NetParameter* weights, std::string* weights_file) {
  ReadSolverStateFile(state_file, state);
  DOPPIO_ENSURE(state->has_learned_net() && state->has_iter())
      << state_file
      << ": not a .solverstate (it has no iter or learned_net); to start from trained weights "
         "use --weights";
  DOPPIO_ENSURE(state->iter() >= 0) << state_file << ": negative iter " << state->iter();
  // learned_net is the path the weights were written to; when the snapshot has moved, look
  // for the file next to the .solverstate.
  *weights_file = state->learned_net();
  if (!std::filesystem::exists(*weights_file)) {
    std::filesystem::path beside = std::filesystem::path(state_file).parent_path() /
                                   std::filesystem::path(*weights_file).filename();
    DOPPIO_ENSURE(std::filesystem::exists(beside))
        << state_file << ": its weights file '" << *weights_file << "' does not exist (nor does '"
        << beside.string() << "')";
    *weights_file = beside.string();
  }
  ReadWeightsFile(*weights_file, weights);
}

template <typename Dtype>
void Solver<Dtype>::Restore(const std::string& state_file) {
  SolverState state;
  NetParameter weights;
  std::string weights_file;
  ReadSnapshot(state_file, &state, &weights, &weights_file);
  RestoreFrom(state, weights, state_file, weights_file + " (learned_net of " + state_file + ")");
}

template <typename Dtype>
void Solver<Dtype>::SnapshotDataPositions(SolverState* state) const {
  const auto& layers = net_->layers();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::optional<std::uint64_t> position = layers[i]->stream_position();
    if (!position) continue;
    DataPosition* saved = state->add_data_position();
    saved->set_layer(net_->layer_label(static_cast<int>(i)));
    saved->set_position(*position);
  }
}

template <typename Dtype>
void Solver<Dtype>::RestoreDataPositions(const SolverState& state,
                                         const std::string& state_origin) {
  std::map<std::string, const DataPosition*> saved;
  for (const DataPosition& position : state.data_position()) saved[position.layer()] = &position;
  const auto& layers = net_->layers();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (!layers[i]->stream_position()) continue;
    const std::string label = net_->layer_label(static_cast<int>(i));
    const auto found = saved.find(label);
    if (found == saved.end()) {
      LOG(WARNING) << state_origin << " holds no data position for layer '" << label
                   << "' (a state written by Caffe or by an older Doppio): its data starts over "
                      "from the first record, so the resumed run will not repeat the "
                      "uninterrupted one";
      continue;
    }
    layers[i]->SeekStream(found->second->position());
    LOG(INFO) << "Layer '" << label << "' resumes its data at record stream position "
              << found->second->position();
    saved.erase(found);
  }
  for (const auto& [label, position] : saved) {
    LOG(WARNING) << state_origin << " holds a data position for layer '" << label
                 << "', which the train net does not have: ignored";
  }
}

template <typename Dtype>
void Solver<Dtype>::RestoreFrom(const SolverState& state, const NetParameter& weights,
                                const std::string& state_origin,
                                const std::string& weights_origin) {
  DOPPIO_ENSURE(state.has_iter() && state.iter() >= 0)
      << state_origin << ": no iteration count, or a negative one";
  // The "multistep" policy indexes its step values with it.
  DOPPIO_ENSURE(state.current_step() >= 0)
      << state_origin << ": negative learning-rate step " << state.current_step();
  CheckWeightsMatchNet(*net_, weights, weights_origin);
  CheckSolverState(state, state_origin);
  net_->RestoreTrainedLayersFrom(weights);
  iter_ = state.iter();
  current_step_ = state.current_step();
  if (loss_scaling_ && state.has_loss_scale()) {
    DOPPIO_ENSURE(std::isfinite(state.loss_scale()) && state.loss_scale() > 0 &&
                  state.loss_scale_clean_updates() >= 0)
        << state_origin << ": loss scale " << state.loss_scale() << " after "
        << state.loss_scale_clean_updates() << " clean updates is not a state loss scaling has";
    loss_scale_ = state.loss_scale();
    loss_scale_clean_updates_ = state.loss_scale_clean_updates();
  } else if (loss_scaling_) {
    LOG(INFO) << state_origin << " holds no loss scale (written without loss scaling): "
              << "starting from " << loss_scale_;
  }
  RestoreSolverState(state);
  RestoreDataPositions(state, state_origin);
  LOG(INFO) << "Restored solver state at iteration " << iter_ << " from " << state_origin;
}

DOPPIO_INSTANTIATE_CLASS(Solver);

}  // namespace doppio
