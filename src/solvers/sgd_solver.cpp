#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "doppio/solvers/larc.hpp"
#include "doppio/solvers/sgd_one_pass.hpp"
#include "doppio/solvers/sgd_solvers.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
SGDSolver<Dtype>::SGDSolver(const SolverParameter& param, std::shared_ptr<GpuContext> gpu,
                            const CpuOptions& cpu)
    : Solver<Dtype>(param, std::move(gpu), cpu),
      larc_params_(LarcParams(this->param_, *this->net_)) {
  AddHistorySet();
  int largest = 0;
  for (const auto* blob : this->net_->learnable_params())
    largest = std::max(largest, blob->count());
  temp_.Reshape(std::vector<int>{largest});
  update_.Reshape(std::vector<int>{largest});
}

template <typename Dtype>
void SGDSolver<Dtype>::AddHistorySet() {
  // One buffer shaped like the parameter arena, each blob a view of its parameter's run, so
  // that an update can walk weights, gradients and history in one pass.
  const Net<Dtype>& net = *this->net_;
  auto arena = std::make_shared<SyncedMemory>(net.arena_count() * sizeof(Dtype));
  const DeviceMath<Dtype> m = math();
  const auto& params = net.learnable_params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto history = std::make_shared<Blob<Dtype>>(params[i]->shape());
    history->SetDataMemory(
        std::make_shared<SyncedMemory>(arena, net.learnable_param_offsets()[i] * sizeof(Dtype),
                                       params[i]->count() * sizeof(Dtype)));
    m.set(history->count(), Dtype(0), m.mutable_data(history.get()));
    history_.push_back(history);
  }
  history_arenas_.push_back(arena);
}

template <typename Dtype>
bool SGDSolver<Dtype>::ApplyUpdate() {
  const Dtype rate = this->GetLearningRate();
  if (this->display_now()) {
    LOG(INFO) << "Iteration " << this->iter_ << ", lr = " << rate;
  }
  ClipGradients();
  if (UpdatesInOnePass()) return OnePassUpdate(rate);
  const int num_params = static_cast<int>(this->net_->learnable_params().size());
  for (int param_id = 0; param_id < num_params; ++param_id) {
    Normalize(param_id);
    const Dtype param_rate = ParamRate(param_id, rate);
    Regularize(param_id);
    ComputeUpdateValue(param_id, param_rate);
  }
  return this->net_->Update();
}

template <typename Dtype>
bool SGDSolver<Dtype>::UpdatesInOnePass() const {
  // The other methods derive from SGD but compute other steps; LARC's rates need each
  // parameter's norms first; debug_info logs each parameter's step before Net::Update.
  return std::string(this->type()) == "SGD" &&
         std::none_of(larc_params_.begin(), larc_params_.end(), [](bool larc) { return larc; }) &&
         !this->net_->debug_info();
}

template <typename Dtype>
bool SGDSolver<Dtype>::OnePassUpdate(Dtype rate) {
  Net<Dtype>& net = *this->net_;
  const std::size_t num_params = net.learnable_params().size();
  std::vector<SgdSegment<Dtype>> segments(num_params);
  // In Dtype, as the per-parameter steps compute them.
  const Dtype weight_decay = this->param_.weight_decay();
  for (std::size_t i = 0; i < num_params; ++i) {
    segments[i].end = net.learnable_param_offsets()[i] + net.learnable_params()[i]->count();
    segments[i].rate = rate * net.params_lr()[i];
    segments[i].decay = weight_decay * net.params_weight_decay()[i];
  }
  const Dtype grad_scale =
      this->param_.iter_size() == 1 ? Dtype(1) : Dtype(1) / this->param_.iter_size();
  const Dtype momentum = this->param_.momentum();
  const bool l1 = this->param_.regularization_type() == "L1";
  SyncedMemory& history = *history_arenas_[0];
#ifdef DOPPIO_WITH_CUDA
  if (GpuContext* gpu = net.gpu_context().get()) {
    return gpu_sgd_one_pass(*gpu, segments, grad_scale, momentum, l1, net.mutable_arena_gpu_data(),
                            net.mutable_arena_gpu_diff(),
                            static_cast<Dtype*>(history.mutable_gpu_data(*gpu)));
  }
#endif
  return cpu_sgd_one_pass(segments, grad_scale, momentum, l1, net.mutable_arena_data(),
                          net.mutable_arena_diff(),
                          static_cast<Dtype*>(history.mutable_cpu_data()));
}

template <typename Dtype>
void SGDSolver<Dtype>::ClipGradients() {
  const Dtype clip_gradients = this->param_.clip_gradients();
  if (clip_gradients < 0) return;
  const auto& params = this->net_->learnable_params();
  Dtype sumsq_diff = 0;
  for (const auto* blob : params) sumsq_diff += blob->sumsq_diff();
  const Dtype l2norm_diff = std::sqrt(sumsq_diff);
  if (l2norm_diff > clip_gradients) {
    const Dtype scale_factor = clip_gradients / l2norm_diff;
    LOG(INFO) << "Gradient clipping: scaling down gradients (L2 norm " << l2norm_diff << " > "
              << clip_gradients << ") by scale factor " << scale_factor;
    for (auto* blob : params) blob->scale_diff(scale_factor);
  }
}

template <typename Dtype>
void SGDSolver<Dtype>::Normalize(int param_id) {
  if (this->param_.iter_size() == 1) return;
  // The gradients of iter_size passes were summed; the update uses their mean.
  auto* blob = this->net_->learnable_params()[param_id];
  const DeviceMath<Dtype> m = math();
  m.scal(blob->count(), Dtype(1) / this->param_.iter_size(), m.mutable_diff(blob));
}

template <typename Dtype>
Dtype SGDSolver<Dtype>::ParamRate(int param_id, Dtype rate) const {
  if (!larc_params_[param_id]) return rate;
  const auto* blob = this->net_->learnable_params()[param_id];
  // The norms are taken where the blob lives (Blob's sums run on its GPU when it has one).
  const double weight_norm = std::sqrt(static_cast<double>(blob->sumsq_data()));
  const double gradient_norm = std::sqrt(static_cast<double>(blob->sumsq_diff()));
  const double decay = static_cast<double>(this->param_.weight_decay()) *
                       this->net_->params_weight_decay()[param_id];
  return static_cast<Dtype>(LarcRate(this->param_, rate, weight_norm, gradient_norm, decay));
}

template <typename Dtype>
void SGDSolver<Dtype>::Regularize(int param_id) {
  auto* blob = this->net_->learnable_params()[param_id];
  // In Dtype, as Caffe computes it.
  const Dtype weight_decay = this->param_.weight_decay();
  const Dtype local_decay = weight_decay * this->net_->params_weight_decay()[param_id];
  if (local_decay == 0) return;
  const int count = blob->count();
  const DeviceMath<Dtype> m = math();
  if (this->param_.regularization_type() == "L2") {
    m.axpy(count, local_decay, m.data(*blob), m.mutable_diff(blob));
  } else {
    Dtype* sign = m.mutable_data(&temp_);
    m.sign(count, m.data(*blob), sign);
    m.axpy(count, local_decay, sign, m.mutable_diff(blob));
  }
}

template <typename Dtype>
void SGDSolver<Dtype>::ComputeUpdateValue(int param_id, Dtype rate) {
  auto* blob = this->net_->learnable_params()[param_id];
  const Dtype momentum = this->param_.momentum();
  const Dtype local_rate = rate * this->net_->params_lr()[param_id];
  const DeviceMath<Dtype> m = math();
  Dtype* history = m.mutable_data(history_[param_id].get());
  // history = local_rate * gradient + momentum * history; the step is the history.
  m.axpby(blob->count(), local_rate, m.diff(*blob), momentum, history);
  m.copy(blob->count(), history, m.mutable_diff(blob));
}

namespace {

// For each history blob of a file in Caffe's layout, its index in history_: files list each set
// of n blobs by Caffe's learnable index, history_ by arena index.
template <typename Dtype>
std::vector<int> CaffeOrderHistoryIds(const Net<Dtype>& net, std::size_t history_size) {
  const std::vector<int>& arena_ids = net.arena_ids_in_caffe_order();
  const std::size_t n = arena_ids.size();
  std::vector<int> ids(history_size);
  for (std::size_t i = 0; i < history_size; ++i) {
    ids[i] = static_cast<int>(i / n * n) + arena_ids[i % n];
  }
  return ids;
}

// Where each of the state's history blobs goes in `history` (as many), or nothing when their
// shapes fit neither Caffe's order nor, for unmarked states only, the arena order Doppio wrote
// before it followed Caffe's. An unmarked state that fits both is read as Caffe's: the shapes
// cannot tell the two apart, and Caffe's is the format's own order.
template <typename Dtype>
std::optional<std::vector<int>> HistoryIdsOf(
    const SolverState& state, const Net<Dtype>& net,
    const std::vector<std::shared_ptr<Blob<Dtype>>>& history) {
  const auto fits = [&](const std::vector<int>& ids) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (BlobProtoShape(state.history(static_cast<int>(i))) != history[ids[i]]->shape()) {
        return false;
      }
    }
    return true;
  };
  std::vector<int> ids = CaffeOrderHistoryIds(net, history.size());
  if (fits(ids)) return ids;
  if (state.history_in_caffe_order()) return std::nullopt;
  std::iota(ids.begin(), ids.end(), 0);
  if (fits(ids)) return ids;
  return std::nullopt;
}

}  // namespace

template <typename Dtype>
void SGDSolver<Dtype>::SnapshotSolverState(SolverState* state) const {
  state->clear_history();
  for (int id : CaffeOrderHistoryIds(*this->net_, history_.size())) {
    history_[id]->ToProto(state->add_history());
  }
  state->set_history_in_caffe_order(true);
}

template <typename Dtype>
void SGDSolver<Dtype>::CheckSolverState(const SolverState& state, const std::string& origin) const {
  DOPPIO_ENSURE(state.history_size() == static_cast<int>(history_.size()))
      << origin << " holds " << state.history_size() << " history blobs, but a " << this->type()
      << " solver for net '" << this->net_->name() << "' keeps " << history_.size()
      << ": it was written by another solver type or for a different net";
  const Net<Dtype>& net = *this->net_;
  const std::vector<int> caffe_ids = CaffeOrderHistoryIds(net, history_.size());
  const auto ids = HistoryIdsOf(state, net, history_);
  if (!ids) {
    for (int i = 0; i < state.history_size(); ++i) {
      const std::vector<int> shape = BlobProtoShape(state.history(i));
      const Blob<Dtype>& expected = *history_[caffe_ids[i]];
      if (shape == expected.shape()) continue;
      const int caffe_id = i % static_cast<int>(net.learnable_params().size());
      const int arena_id = net.arena_ids_in_caffe_order()[caffe_id];
      const auto& [layer_id, blob_id] =
          net.param_layer_indices()[net.learnable_param_ids()[arena_id]];
      DOPPIO_FAIL() << origin << ": history blob " << i << " has shape " << ShapeString(shape)
                    << " but learnable parameter " << caffe_id << " of net '" << net.name()
                    << "' (layer '" << net.layer_names()[layer_id] << "', blob " << blob_id
                    << ") has shape " << expected.shape_string()
                    << ": it was written for a different net";
    }
  }
  if (*ids != caffe_ids) {
    LOG(WARNING) << origin
                 << ": its history is in the order of Doppio's parameter arena, as Doppio "
                    "wrote states before they followed Caffe's learnable-parameter order (its "
                    "shapes fit that order, not Caffe's); reading it in that order. New "
                    "snapshots are in Caffe's order.";
  }
}

template <typename Dtype>
void SGDSolver<Dtype>::RestoreSolverState(const SolverState& state) {
  const std::vector<int> ids = *HistoryIdsOf(state, *this->net_, history_);
  for (int i = 0; i < state.history_size(); ++i) {
    history_[ids[i]]->FromProto(state.history(i), false);
  }
}

DOPPIO_INSTANTIATE_CLASS(SGDSolver);
REGISTER_SOLVER_CLASS(SGD);

}  // namespace doppio
