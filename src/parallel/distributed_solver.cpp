#include "doppio/parallel/distributed_solver.hpp"

#include <glog/logging.h>

#include <limits>
#include <random>
#include <sstream>

#include "doppio/core/layer_registry.hpp"
#include "doppio/parallel/compression_state.hpp"
#include "doppio/solvers/solver_registry.hpp"

namespace doppio {

template <typename Dtype>
DistributedSolver<Dtype>::DistributedSolver(const SolverParameter& param,
                                            std::shared_ptr<Communicator> comm,
                                            const ParallelOptions& options, FaultInjection fault)
    : comm_(std::move(comm)), options_(options), fault_(std::move(fault)) {
  CHECK(comm_ != nullptr);
  bool ok = true;
  std::string error;
  ExitCode code = ExitCode::kUserError;
  try {
    DOPPIO_ENSURE(options_.bucket_mb > 0)
        << "--bucket_mb must be positive, not " << options_.bucket_mb;
    DOPPIO_ENSURE(options_.lr_warmup_iters >= 0)
        << "--lr_warmup_iters must be >= 0, not " << options_.lr_warmup_iters;
    DOPPIO_ENSURE(!options_.scale_lr || options_.lr_scaling == LrScaling::kNone)
        << "--lr_scaling=" << LrScalingName(options_.lr_scaling)
        << " and --scale_lr both scale base_lr; give one";
    DOPPIO_ENSURE(options_.compression_start_iter >= 0)
        << "--compression_start_iter must be >= 0, not " << options_.compression_start_iter;
    snapshot_interval_ = param.snapshot();
    snapshot_after_train_ = param.snapshot_after_train();
    max_iter_ = param.max_iter();
    PrepareParameters(param);
    solver_ = SolverRegistry<Dtype>::CreateSolver(config_.param, options_.gpu, options_.cpu);
    if (!options_.timeline_file.empty()) timeline_ = std::make_unique<Timeline>(0.0);
    // Top-k's momentum correction sends steps with the SGD solver's momentum in them
    // (topk_compressor.hpp); the other solvers, and LARC's rate from the gradient's norm,
    // keep plain error feedback.
    const double topk_momentum = std::string(solver_->type()) == "SGD" && !config_.param.larc()
                                     ? config_.param.momentum()
                                     : 0.0;
    sync_ = std::make_unique<GradientSync<Dtype>>(solver_->net().get(), comm_.get(), options_.sync,
                                                  options_.bucket_mb, config_.param.iter_size(),
                                                  timeline_.get(), options_.compression,
                                                  options_.compression_start_iter, topk_momentum);
    // One rank without a timeline reports no times: no events, no wait for them.
    if (options_.gpu && (comm_->size() > 1 || timeline_)) {
      device_timer_ = MakeDeviceTimer(options_.gpu);
      sync_->set_device_timer(device_timer_.get());
    }
  } catch (const Error& caught) {
    ok = false;
    error = caught.what();
    code = caught.code();
  }
  AgreeOnFailure(*comm_, ok, error, "set up its solver", code);

  const auto& net = *solver_->net();
  for (std::size_t i = 0; i < net.layers().size() && batch_ == 0; ++i) {
    if (net.bottom_vecs()[i].empty() && !net.top_vecs()[i].empty() &&
        net.top_vecs()[i][0]->num_axes() > 0) {
      batch_ = net.top_vecs()[i][0]->shape(0);
    }
  }
  if (options_.lr_scaling != LrScaling::kNone) ScaleLearningRate();
  const int size = comm_->size();
  if (size > 1) {
    CheckStartUpAgreement(*comm_, config_.net_hash, config_.solver_hash, sync_->LayoutHash());
    BroadcastWeights("rank 0's initial weights");
  }
  if (timeline_) {
    // A common zero for every rank's clock.
    comm_->Barrier("timeline start");
    timeline_->set_origin(CommClockSeconds());
  }
  InstallHooks();

  if (size > 1) {
    LOG(INFO) << "Data-parallel training on " << comm_->description();
    LOG(INFO) << "Gradient aggregation: --sync=" << SyncModeName(options_.sync) << ", "
              << sync_->Describe() << " (--bucket_mb=" << options_.bucket_mb << ")";
    if (options_.compression.active()) {
      LOG(INFO) << "Gradient compression: --grad_compression=" << options_.compression.text
                << (options_.compression_start_iter > 0
                        ? " from iteration " + std::to_string(options_.compression_start_iter)
                        : std::string());
      if (sync_->corrected_momentum() > 0) {
        LOG(INFO) << "Top-k with momentum correction: each rank's residual accumulates its "
                     "velocity (momentum "
                  << sync_->corrected_momentum()
                  << "); the solver's momentum turns the steps sent back into its history";
      }
    }
    if (!config_.sharded_layers.empty()) {
      std::ostringstream names;
      for (std::size_t i = 0; i < config_.sharded_layers.size(); ++i) {
        names << (i ? ", " : "") << config_.sharded_layers[i];
      }
      LOG(INFO) << "Each rank reads its own shard (block-cyclic) of the data of layers "
                << names.str();
    }
    for (std::size_t i = 0; i < config_.test_iter_total.size(); ++i) {
      LOG(INFO) << "Test net #" << i << ": its " << config_.test_iter_total[i]
                << " test batches are split among the ranks (" << config_.param.test_iter(i)
                << " on rank 0)";
    }
  }
  if (size == 1 && options_.compression.active()) {
    LOG(INFO) << "--grad_compression=" << options_.compression.text
              << ": one rank sends no gradients, nothing is compressed";
  }
  const int iter_size = config_.param.iter_size();
  LOG(INFO) << "Batch: " << batch_ << " per rank"
            << (iter_size > 1 ? " x iter_size " + std::to_string(iter_size) : std::string())
            << " on " << size << " rank" << (size > 1 ? "s" : "") << ": global batch "
            << static_cast<long long>(batch_) * iter_size * size;
  if (fault_.active()) {
    if (fault_.rank >= size) {
      LOG(WARNING) << "DOPPIO_FAIL_RANK=" << fault_.rank << " but the job has " << size
                   << " rank(s): no fault will be injected";
    } else {
      LOG(WARNING) << "fault injection armed: rank " << fault_.rank << " will fail (" << fault_.mode
                   << ") at iteration " << fault_.iter;
    }
  }
}

template <typename Dtype>
DistributedSolver<Dtype>::~DistributedSolver() = default;

template <typename Dtype>
void DistributedSolver<Dtype>::PrepareParameters(const SolverParameter& param) {
  RankSetup setup;
  setup.rank = comm_->rank();
  setup.size = comm_->size();
  setup.scale_lr = options_.scale_lr;
  setup.lr_scaling = options_.lr_scaling;
  setup.lr_warmup_iters = options_.lr_warmup_iters;
  setup.timeline = !options_.timeline_file.empty();
  std::vector<RankNote> notes;
  auto say = [&notes] {
    for (const RankNote& note : notes) {
      if (note.warning) {
        LOG(WARNING) << note.text;
      } else {
        LOG(INFO) << note.text;
      }
    }
  };
  SolverParameter agreed = param;
  if (setup.size > 1 && agreed.random_seed() < 0) {
    // Caffe's -1 asks for a fresh seed; every rank must draw its per-sample crops, mirrors
    // and dropout masks from the same one, so rank 0's is everyone's.
    std::uint64_t seed =
        setup.rank == 0 ? (std::uint64_t{std::random_device{}()} << 31) ^ std::random_device{}()
                        : 0;
    comm_->Broadcast(&seed, 1, CommType::kUInt64, 0, "random seed");
    agreed.set_random_seed(static_cast<std::int64_t>(seed & 0x7fffffffffffffffULL));
    LOG(INFO) << "random_seed -1: every rank uses rank 0's fresh seed " << agreed.random_seed();
  }
  try {
    config_ = ConfigureRank(setup.size > 1 ? ReadSolverNetFiles(agreed) : agreed, setup, &notes);
  } catch (const Error&) {
    say();
    throw;
  }
  say();
}

// Every rank computes the same factor from the same net and solver (checked at start-up), so
// the ranks' rates stay equal without a collective.
template <typename Dtype>
void DistributedSolver<Dtype>::ScaleLearningRate() {
  SolverParameter& p = config_.param;
  const long long global = static_cast<long long>(batch_) * p.iter_size() * comm_->size();
  const bool given = p.has_reference_batch();
  const long long reference = given ? p.reference_batch() : batch_;
  const double factor = LrScalingFactor(options_.lr_scaling, global, reference);
  const float base_lr = p.base_lr();
  p.set_base_lr(static_cast<float>(base_lr * factor));
  std::ostringstream warm_up;
  if (options_.lr_warmup_iters > 0) {
    p.set_warmup_start_factor(static_cast<float>(1 / factor));
    warm_up << "; the warm-up starts from the reference rate (" << p.warmup_start_factor() << " x)";
  }
  solver_->SetLearningRate(p.base_lr(), p.warmup_start_factor());
  LOG(INFO) << "Learning rate scaling (--lr_scaling=" << LrScalingName(options_.lr_scaling)
            << "): global batch " << global << ", reference batch " << reference
            << (given ? " (reference_batch)" : " (the per-process batch)") << ": base_lr "
            << base_lr << " x " << factor << " = " << p.base_lr() << warm_up.str();
}

template <typename Dtype>
std::uint64_t DistributedSolver<Dtype>::WeightsChecksum() const {
  return doppio::WeightsChecksum(*solver_);
}

template <typename Dtype>
void DistributedSolver<Dtype>::BroadcastWeights(const std::string& why) {
  doppio::BroadcastWeights(*comm_, solver_.get(), why);
}

template <typename Dtype>
void DistributedSolver<Dtype>::InstallHooks() {
  Net<Dtype>* net = solver_->net().get();
  if (timeline_) {
    std::vector<std::string> forward_names, backward_names;
    std::vector<const char*> forward_categories;
    for (std::size_t i = 0; i < net->layers().size(); ++i) {
      forward_names.push_back("forward " + net->layer_label(static_cast<int>(i)));
      backward_names.push_back("backward " + net->layer_label(static_cast<int>(i)));
      const std::string type = net->layers()[i]->type();
      forward_categories.push_back(LayerTypeTraits(type).reads_data ? "data wait" : "forward");
    }
    net->add_after_forward([this, forward_names, forward_categories](int id) {
      if (device_timer_) {
        const int mark = device_timer_->Mark();
        device_spans_.push_back({forward_names[id], forward_categories[id], last_mark_, mark});
        last_mark_ = mark;
        return;
      }
      const double now = CommClockSeconds();
      timeline_->Span(forward_names[id], forward_categories[id], Timeline::kCompute, last_event_,
                      now);
      last_event_ = now;
    });
    const std::vector<bool> needs_backward = net->layer_need_backward();
    net->add_after_backward([this, backward_names, needs_backward](int id) {
      if (device_timer_) {
        const int mark = device_timer_->Mark();
        if (needs_backward[id]) {
          device_spans_.push_back({backward_names[id], "backward", last_mark_, mark});
        }
        last_mark_ = mark;
        return;
      }
      const double now = CommClockSeconds();
      if (needs_backward[id]) {
        timeline_->Span(backward_names[id], "backward", Timeline::kCompute, last_event_, now);
      }
      last_event_ = now;
    });
    for (std::size_t t = 0; t < solver_->test_nets().size(); ++t) {
      Net<Dtype>* test_net = solver_->test_nets()[t].get();
      std::vector<std::string> names;
      for (std::size_t i = 0; i < test_net->layers().size(); ++i) {
        names.push_back("test #" + std::to_string(t) + " " +
                        test_net->layer_label(static_cast<int>(i)));
      }
      test_net->add_after_forward([this, names](int id) {
        const double now = CommClockSeconds();
        timeline_->Span(names[id], "test", Timeline::kCompute, last_event_, now);
        last_event_ = now;
      });
    }
  }
  net->add_after_backward([this](int id) { sync_->AfterBackward(id); });
  if (fault_.active() && fault_.mode == "nan") {
    // The first layer's output of the faulty rank's iteration holds a NaN: a divergence that
    // this rank's loss shows and the others' do not.
    net->add_after_forward([this, net](int id) {
      if (id != 0 || comm_->rank() != fault_.rank || solver_->iter() != fault_.iter) return;
      if (net->top_vecs()[0].empty() || net->top_vecs()[0][0]->count() == 0) return;
      net->top_vecs()[0][0]->mutable_cpu_data()[0] = std::numeric_limits<Dtype>::quiet_NaN();
    });
  }

  SolverCallbacks callbacks;
  callbacks.on_start = [this] {
    fault_.MaybeFail(comm_->rank(), solver_->iter());
    iteration_start_ = CommClockSeconds();
    last_event_ = iteration_start_;
    if (device_timer_) {
      device_timer_->Start(iteration_start_);
      device_spans_.clear();
      last_mark_ = 0;
    }
    sync_->BeginIteration(solver_->iter());
  };
  callbacks.on_gradients_ready = [this] {
    sync_->FinishGradients();
    totals_.compute += sync_->compute_end() - iteration_start_;
    for (const DeviceSpan& span : device_spans_) {
      timeline_->Span(span.name, span.category, Timeline::kCompute, device_timer_->time(span.start),
                      device_timer_->time(span.end));
    }
    gradients_ready_ = CommClockSeconds();
  };
  callbacks.apply_update = [this] { return sync_->ApplyUpdateHere(); };
  callbacks.on_update_applied = [this] {
    const double updated = CommClockSeconds();
    if (timeline_) {
      timeline_->Span(sync_->ApplyUpdateHere() ? "update" : "update (on rank 0)", "update",
                      Timeline::kCompute, gradients_ready_, updated);
    }
    sync_->AfterUpdate();
    const double now = CommClockSeconds();
    const SyncStats& stats = sync_->last_stats();
    totals_.wait += stats.wait;
    totals_.comm += stats.comm;
    totals_.hidden += stats.hidden;
    totals_.codec += stats.codec;
    totals_.bytes += static_cast<double>(stats.bytes);
    totals_.iteration += now - iteration_start_;
    ++totals_.iterations;
    last_event_ = now;
    action_agreement_.EndIteration();
    const int display = config_.param.display();
    if (display > 0 && solver_->iter() % display == 0) {
      const long long global_batch =
          static_cast<long long>(batch_) * config_.param.iter_size() * comm_->size();
      LogRankTimes(*comm_, totals_, &at_last_display_, solver_->iter(), global_batch,
                   sync_->compressing() ? options_.compression.text : "none");
    }
  };
  callbacks.on_test_scores = [this](int id, std::vector<double>* means) {
    ReduceTestScores(*comm_, solver_->test_nets()[id].get(), config_.param.test_iter(id),
                     config_.test_iter_total[id], means);
  };
  callbacks.on_snapshot = [this](SolverState* state) {
    if (!sync_->compressing() || !sync_->compression().stateful()) return;
    if (compression_state_iter_ != solver_->iter()) {
      LOG(WARNING) << "The snapshot at iteration " << solver_->iter() << " holds no state of "
                   << "--grad_compression=" << options_.compression.text
                   << " (the ranks did not gather it there): a run resumed from it starts "
                      "with zero residuals";
      return;
    }
    *state->mutable_compression() = compression_state_;
  };
  solver_->add_callbacks(callbacks);
  solver_->SetActionFunction([this] {
    const std::optional<Divergence>& diverged = solver_->divergence();
    const bool end_of_iteration = action_agreement_.in_iteration();
    const SolverAction action =
        action_agreement_.Agree(*comm_, local_action_ ? local_action_() : SolverAction::NONE,
                                diverged ? &*diverged : nullptr);
    // Every rank knows here, at the same point, whether rank 0 snapshots next.
    if (end_of_iteration && sync_->compressing() &&
        SnapshotFollows(action_agreement_.snapshot_agreed(), action)) {
      GatherCompressionState(*comm_, *sync_, &compression_state_);
      compression_state_iter_ = solver_->iter();
    }
    return action;
  });
}

template <typename Dtype>
bool DistributedSolver<Dtype>::SnapshotFollows(bool snapshot_agreed, SolverAction action) const {
  const int iter = solver_->iter();
  if (snapshot_agreed) return true;
  if (snapshot_interval_ > 0 && iter % snapshot_interval_ == 0) return true;
  return snapshot_after_train_ && (Stops(action) || iter >= max_iter_);
}

template <typename Dtype>
void DistributedSolver<Dtype>::Restore(const std::string& resume_file) {
  SolverState state;
  NetParameter weights;
  std::string state_bytes, weights_bytes, weights_origin, error;
  bool ok = true;
  if (comm_->rank() == 0) {
    try {
      std::string weights_file;
      Solver<Dtype>::ReadSnapshot(resume_file, &state, &weights, &weights_file);
      state_bytes = state.SerializeAsString();
      weights_bytes = weights.SerializeAsString();
      weights_origin = weights_file + " (learned_net of " + resume_file + ")";
    } catch (const Error& caught) {
      ok = false;
      error = caught.what();
    }
  }
  if (comm_->size() > 1) {
    // Only rank 0 reads the files: the ranks cannot restore different states.
    std::int32_t status = ok ? 1 : 0;
    comm_->Broadcast(&status, 1, CommType::kInt32, 0, "snapshot status");
    if (!status) {
      comm_->BroadcastBytes(&error, 0, "snapshot error");
      throw AgreedError("rank 0 could not read the snapshot: " + error);
    }
    comm_->BroadcastBytes(&state_bytes, 0, "snapshot state");
    comm_->BroadcastBytes(&weights_bytes, 0, "snapshot weights");
    comm_->BroadcastBytes(&weights_origin, 0, "snapshot origin");
    if (comm_->rank() != 0) {
      CHECK(state.ParseFromString(state_bytes));
      CHECK(weights.ParseFromString(weights_bytes));
    }
  } else if (!ok) {
    throw AgreedError(error);
  }
  try {
    solver_->RestoreFrom(state, weights, resume_file, weights_origin);
  } catch (const Error& error) {
    // Every rank checks the same state against the same net.
    throw AgreedError(error.what());
  }
  try {
    RestoreCompressionState(state, comm_->size(), comm_->rank(), resume_file, sync_.get());
  } catch (const Error& error) {
    throw AgreedError(error.what());
  }
  if (comm_->size() > 1) {
    LOG(INFO) << "Rank 0 read " << resume_file << " and sent its iteration (" << state.iter()
              << "), learning-rate state, history and weights to all " << comm_->size() << " ranks";
    BroadcastWeights("the restored weights");
  }
}

template <typename Dtype>
void DistributedSolver<Dtype>::Solve(const std::string& resume_file) {
  if (!resume_file.empty()) {
    LOG(INFO) << "Restoring previous solver status from " << resume_file;
    Restore(resume_file);
  }
  // The first test pass runs before any iteration has started: its first span begins here.
  last_event_ = CommClockSeconds();
  solver_->Solve();
  if (comm_->size() > 1 && options_.sync != SyncMode::kReduceBroadcast) {
    // Every rank applied the same updates: their learned weights must still agree.
    CheckLearnedWeightsAgree(*comm_, *solver_->net());
  }
  if (timeline_) {
    const std::size_t events = timeline_->Write(comm_.get(), options_.timeline_file);
    LOG(INFO) << "Timeline of " << comm_->size() << " rank" << (comm_->size() > 1 ? "s" : "")
              << " (" << events << " events) written to " << options_.timeline_file
              << ": open it in chrome://tracing or https://ui.perfetto.dev";
  }
}

DOPPIO_INSTANTIATE_CLASS(DistributedSolver);

}  // namespace doppio
