#include "doppio/parallel/distributed_solver.hpp"

#include <glog/logging.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iomanip>
#include <sstream>
#include <thread>

#include "doppio/core/layer_registry.hpp"
#include "doppio/data/shard.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/hash.hpp"
#include "doppio/util/io.hpp"

namespace doppio {

namespace {

std::string DeterministicBytes(const google::protobuf::Message& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

std::string RankList(const std::vector<int>& ranks) {
  std::ostringstream text;
  text << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size(); ++i) text << (i ? ", " : "") << ranks[i];
  return text.str();
}

std::string Hex(std::uint64_t value) {
  std::ostringstream text;
  text << std::hex << std::setw(16) << std::setfill('0') << value;
  return text.str();
}

std::string Milliseconds(double seconds) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(seconds < 0.01 ? 2 : 1) << seconds * 1e3 << " ms";
  return text.str();
}

int ParseEnvInt(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  DOPPIO_ENSURE(end != text && *end == '\0' && value >= 0 && value < (1 << 30))
      << name << " must be a non-negative integer, not '" << text << "'";
  return static_cast<int>(value);
}

}  // namespace

void AgreeOnFailure(Communicator& comm, bool ok, const std::string& message,
                    const std::string& what) {
  if (comm.size() == 1) {
    if (!ok) throw AgreedError(message);
    return;
  }
  const std::vector<std::int32_t> flags =
      comm.AllgatherValue<std::int32_t>(ok ? 1 : 0, "failure check");
  std::vector<int> failed;
  for (int r = 0; r < comm.size(); ++r) {
    if (!flags[r]) failed.push_back(r);
  }
  if (failed.empty()) return;
  // Every rank reports the first failed rank's own message.
  std::string first_message = message;
  comm.BroadcastBytes(&first_message, failed[0], "failure message");
  std::ostringstream text;
  text << "rank " << failed[0] << " could not " << what << ": " << first_message;
  if (failed.size() > 1) {
    std::vector<int> others(failed.begin() + 1, failed.end());
    text << " (" << RankList(others) << " failed too)";
  }
  throw AgreedError(text.str());
}

FaultInjection FaultInjection::FromEnvironment() {
  FaultInjection fault;
  fault.rank = ParseEnvInt("DOPPIO_FAIL_RANK");
  fault.iter = ParseEnvInt("DOPPIO_FAIL_ITER");
  if (const char* mode = std::getenv("DOPPIO_FAIL_MODE")) fault.mode = mode;
  if (fault.rank < 0) return fault;
  DOPPIO_ENSURE(fault.iter >= 0) << "DOPPIO_FAIL_RANK is set, so DOPPIO_FAIL_ITER must be too";
  DOPPIO_ENSURE(fault.mode == "error" || fault.mode == "crash" || fault.mode == "exit" ||
                fault.mode == "hang")
      << "DOPPIO_FAIL_MODE must be error, crash, exit or hang, not '" << fault.mode << "'";
  return fault;
}

template <typename Dtype>
DistributedSolver<Dtype>::DistributedSolver(const SolverParameter& param,
                                            std::shared_ptr<Communicator> comm,
                                            const ParallelOptions& options, FaultInjection fault)
    : comm_(std::move(comm)), options_(options), fault_(std::move(fault)) {
  CHECK(comm_ != nullptr);
  bool ok = true;
  std::string error;
  try {
    DOPPIO_ENSURE(options_.bucket_mb > 0)
        << "--bucket_mb must be positive, not " << options_.bucket_mb;
    DOPPIO_ENSURE(options_.lr_warmup_iters >= 0)
        << "--lr_warmup_iters must be >= 0, not " << options_.lr_warmup_iters;
    PrepareParameters(param);
    solver_ = SolverRegistry<Dtype>::CreateSolver(rank_param_, options_.gpu);
    if (!options_.timeline_file.empty()) timeline_ = std::make_unique<Timeline>(0.0);
    sync_ = std::make_unique<GradientSync<Dtype>>(solver_->net().get(), comm_.get(), options_.sync,
                                                  options_.bucket_mb, rank_param_.iter_size(),
                                                  timeline_.get());
    // One rank without a timeline reports no times: no events, no wait for them.
    if (options_.gpu && (comm_->size() > 1 || timeline_)) {
      device_timer_ = MakeDeviceTimer(options_.gpu);
      sync_->set_device_timer(device_timer_.get());
    }
  } catch (const Error& caught) {
    ok = false;
    error = caught.what();
  }
  AgreeOnFailure(*comm_, ok, error, "set up its solver");

  const auto& net = *solver_->net();
  for (std::size_t i = 0; i < net.layers().size() && batch_ == 0; ++i) {
    if (net.bottom_vecs()[i].empty() && !net.top_vecs()[i].empty() &&
        net.top_vecs()[i][0]->num_axes() > 0) {
      batch_ = net.top_vecs()[i][0]->shape(0);
    }
  }
  const int size = comm_->size();
  if (size > 1) {
    CheckAgreement();
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
    if (!sharded_layers_.empty()) {
      std::ostringstream names;
      for (std::size_t i = 0; i < sharded_layers_.size(); ++i) {
        names << (i ? ", " : "") << sharded_layers_[i];
      }
      LOG(INFO) << "Each rank reads its own shard (block-cyclic) of the data of layers "
                << names.str();
    }
    for (std::size_t i = 0; i < test_iter_total_.size(); ++i) {
      LOG(INFO) << "Test net #" << i << ": its " << test_iter_total_[i]
                << " test batches are split among the ranks (" << rank_param_.test_iter(i)
                << " on rank 0)";
    }
  }
  const int iter_size = rank_param_.iter_size();
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
  const int rank = comm_->rank();
  const int size = comm_->size();
  SolverParameter p = param;
  UpgradeSolverType(&p);
  const int train_sources =
      p.has_net() + p.has_net_param() + p.has_train_net() + p.has_train_net_param();
  // Read the net files in, so that the ranks compare (and shard) what they will build. With
  // conflicting fields the parameter is left for the solver to refuse.
  if (size > 1 && train_sources == 1) {
    auto read = [](const std::string& field, const std::string& path) {
      try {
        return ReadNetParamsFromTextFile(path);
      } catch (const Error& error) {
        throw Error("solver field " + field + ": " + error.what());
      }
    };
    if (p.has_net()) {
      *p.mutable_net_param() = read("net", p.net());
      p.clear_net();
    }
    if (p.has_train_net()) {
      *p.mutable_train_net_param() = read("train_net", p.train_net());
      p.clear_train_net();
    }
    for (int i = 0; i < p.test_net_size(); ++i) {
      *p.add_test_net_param() = read("test_net #" + std::to_string(i), p.test_net(i));
    }
    p.clear_test_net();
  }

  // Learning rate for the global batch: changed only when asked, and always said.
  if (options_.scale_lr) {
    LOG(INFO) << "--scale_lr: base_lr " << p.base_lr() << " x " << size
              << " ranks = " << p.base_lr() * size;
    p.set_base_lr(p.base_lr() * size);
  } else if (size > 1) {
    LOG(INFO) << "base_lr " << p.base_lr() << " is used unchanged for the global batch of " << size
              << " ranks (--scale_lr multiplies it by the number of ranks)";
  }
  if (options_.lr_warmup_iters > 0) {
    p.set_warmup_iter(options_.lr_warmup_iters);
    if (options_.scale_lr) p.set_warmup_start_factor(1.0f / size);
    LOG(INFO) << "--lr_warmup_iters: the learning rate rises linearly from "
              << p.warmup_start_factor() << " x to 1 x over the first " << p.warmup_iter()
              << " iterations";
  }

  // What every rank must agree on: everything but what only rank 0 uses (the weights to
  // load, where snapshots go), the seeds (rank 0's weights replace the others') and the
  // device (with --gpu=all each rank of a node has its own).
  {
    SolverParameter common = p;
    common.clear_random_seed();
    common.clear_weights();
    common.clear_snapshot_prefix();
    common.clear_device_id();
    Hasher net_hash;
    net_hash.Add(DeterministicBytes(common.net_param()));
    net_hash.Add(DeterministicBytes(common.train_net_param()));
    for (const auto& test_net : common.test_net_param()) net_hash.Add(DeterministicBytes(test_net));
    net_hash.Add(common.net()).Add(common.train_net());
    for (const auto& file : common.test_net()) net_hash.Add(file);
    common.clear_net_param();
    common.clear_train_net_param();
    common.clear_test_net_param();
    common.clear_net();
    common.clear_train_net();
    common.clear_test_net();
    Hasher solver_hash;
    solver_hash.Add(DeterministicBytes(common));
    solver_hash.Add(static_cast<int>(options_.timeline_file.empty()));
    net_hash_ = net_hash.value();
    solver_hash_ = solver_hash.value();
  }

  // Per rank from here on.
  if (size > 1) {
    auto shard = [&](NetParameter* net, const std::string& origin) {
      for (const LayerParameter& layer : net->layer()) {
        const LayerTraits& traits = LayerTypeTraits(layer.type());
        if (traits.shard != nullptr) {
          if (std::find(sharded_layers_.begin(), sharded_layers_.end(), layer.name()) ==
              sharded_layers_.end()) {
            sharded_layers_.push_back(layer.name());
          }
        } else if (traits.reads_data && traits.unsupported.empty()) {
          LOG(WARNING) << origin << ": layer '" << layer.name() << "' (" << layer.type()
                       << ") does not shard its data: every rank reads the same records";
        }
      }
      ShardDataLayers(net, rank, size);
    };
    if (p.has_net_param()) shard(p.mutable_net_param(), "net");
    if (p.has_train_net_param()) shard(p.mutable_train_net_param(), "train_net");
    for (int i = 0; i < p.test_net_param_size(); ++i) {
      shard(p.mutable_test_net_param(i), "test_net #" + std::to_string(i));
    }
    // The test set is scored once: the ranks split the test batches among them.
    for (int i = 0; i < p.test_iter_size(); ++i) {
      const int total = p.test_iter(i);
      DOPPIO_ENSURE(total == 0 || total >= size)
          << "solver: test_iter #" << i << " is " << total << ", fewer than the " << size
          << " ranks; the ranks split the test batches among them, and each needs one";
      test_iter_total_.push_back(total);
      p.set_test_iter(i, total / size + (rank < total % size ? 1 : 0));
    }
    if (p.random_seed() >= 0 && rank > 0) {
      // Own streams for dropout and cropping; the weights come from rank 0.
      p.set_random_seed(p.random_seed() + 1000003LL * rank);
    }
    if (rank > 0) {
      p.clear_weights();
      p.set_snapshot(0);
      p.set_snapshot_after_train(false);
    }
  } else {
    for (int i = 0; i < p.test_iter_size(); ++i) test_iter_total_.push_back(p.test_iter(i));
  }
  rank_param_ = p;
}

template <typename Dtype>
void DistributedSolver<Dtype>::CheckAgreement() {
  std::uint64_t mine[3] = {net_hash_, solver_hash_, sync_->LayoutHash()};
  std::vector<std::uint64_t> all(3 * comm_->size());
  comm_->Allgather(mine, all.data(), 3, CommType::kUInt64, "start-up agreement");
  const char* what[3] = {"nets (the training and test net definitions)",
                         "solver settings (or timeline flag)",
                         "gradient bucket layout (--sync, --bucket_mb, parameter shapes)"};
  std::ostringstream problems;
  bool any = false;
  for (int k = 0; k < 3; ++k) {
    std::vector<int> differ;
    for (int r = 1; r < comm_->size(); ++r) {
      if (all[3 * r + k] != all[k]) differ.push_back(r);
    }
    if (differ.empty()) continue;
    problems << (any ? "; " : "") << RankList(differ) << (differ.size() == 1 ? " has" : " have")
             << " different " << what[k] << " from rank 0 (hash " << Hex(all[3 * differ[0] + k])
             << " vs " << Hex(all[k]) << ")";
    any = true;
  }
  if (any) {
    throw AgreedError("the ranks disagree before training: " + problems.str() +
                      ". Every rank must run the same solver and net files with the same "
                      "--sync and --bucket_mb; refusing to train");
  }
}

template <typename Dtype>
std::uint64_t DistributedSolver<Dtype>::WeightsChecksum() const {
  Hasher hash;
  auto add = [&](const Net<Dtype>& net) {
    if (net.arena_count() > 0) hash.AddBytes(net.arena_data(), net.arena_count() * sizeof(Dtype));
  };
  add(*solver_->net());
  for (const auto& test_net : solver_->test_nets()) add(*test_net);
  return hash.value();
}

template <typename Dtype>
void DistributedSolver<Dtype>::BroadcastWeights(const std::string& why) {
  if (comm_->size() == 1) return;
  auto broadcast = [&](Net<Dtype>* net, const std::string& which) {
    if (net->arena_count() == 0) return;
    comm_->Broadcast(net->mutable_arena_data(), net->arena_count(), CommTypeOf<Dtype>(), 0,
                     "broadcast " + which + " weights");
  };
  broadcast(solver_->net().get(), "training net");
  for (std::size_t i = 0; i < solver_->test_nets().size(); ++i) {
    broadcast(solver_->test_nets()[i].get(), "test net #" + std::to_string(i));
  }
  const std::vector<std::uint64_t> sums = comm_->AllgatherValue(WeightsChecksum(), "checksum");
  std::vector<int> differ;
  for (int r = 1; r < comm_->size(); ++r) {
    if (sums[r] != sums[0]) differ.push_back(r);
  }
  if (!differ.empty()) {
    throw AgreedError("after broadcasting " + why + ", the weights of " + RankList(differ) +
                      " differ from rank 0's (checksum " + Hex(sums[differ[0]]) + " vs " +
                      Hex(sums[0]) + ")");
  }
  LOG(INFO) << "Broadcast " << why << " to " << comm_->size()
            << " ranks; every rank's weights checksum is " << Hex(sums[0]);
}

template <typename Dtype>
void DistributedSolver<Dtype>::InstallHooks() {
  Net<Dtype>* net = solver_->net().get();
  if (timeline_) {
    std::vector<std::string> forward_names, backward_names;
    std::vector<const char*> forward_categories;
    for (std::size_t i = 0; i < net->layers().size(); ++i) {
      forward_names.push_back("forward " + net->layer_names()[i]);
      backward_names.push_back("backward " + net->layer_names()[i]);
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
      for (const std::string& name : test_net->layer_names()) {
        names.push_back("test #" + std::to_string(t) + " " + name);
      }
      test_net->add_after_forward([this, names](int id) {
        const double now = CommClockSeconds();
        timeline_->Span(names[id], "test", Timeline::kCompute, last_event_, now);
        last_event_ = now;
      });
    }
  }
  net->add_after_backward([this](int id) { sync_->AfterBackward(id); });

  SolverCallbacks callbacks;
  callbacks.on_start = [this] {
    MaybeInjectFault();
    iteration_start_ = CommClockSeconds();
    last_event_ = iteration_start_;
    if (device_timer_) {
      device_timer_->Start(iteration_start_);
      device_spans_.clear();
      last_mark_ = 0;
    }
    sync_->BeginIteration();
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
    totals_.iteration += now - iteration_start_;
    ++totals_.iterations;
    last_event_ = now;
    in_iteration_ = true;
    const int display = rank_param_.display();
    if (display > 0 && solver_->iter() % display == 0) LogRankTimes();
  };
  callbacks.on_test_scores = [this](int id, std::vector<double>* means) {
    ReduceTestScores(id, means);
  };
  solver_->add_callbacks(callbacks);
  solver_->SetActionFunction([this] { return AgreedAction(); });
}

template <typename Dtype>
void DistributedSolver<Dtype>::MaybeInjectFault() {
  if (!fault_.active() || fault_.rank != comm_->rank() || fault_.iter != solver_->iter()) return;
  std::ostringstream what;
  what << "fault injection (DOPPIO_FAIL_RANK=" << fault_.rank << " DOPPIO_FAIL_ITER=" << fault_.iter
       << " DOPPIO_FAIL_MODE=" << fault_.mode << "): rank " << fault_.rank << " fails at iteration "
       << fault_.iter;
  if (fault_.mode == "error") throw Error(what.str());
  LOG(ERROR) << what.str();
  google::FlushLogFiles(google::GLOG_INFO);
  if (fault_.mode == "crash") std::raise(SIGSEGV);
  if (fault_.mode == "exit") std::_Exit(3);
  while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
}

template <typename Dtype>
SolverAction DistributedSolver<Dtype>::AgreedAction() {
  SolverAction local = local_action_ ? local_action_() : SolverAction::NONE;
  if (!in_iteration_) {
    // Polled between test batches, whose number differs between ranks: no collective here;
    // the request waits for the end of the next iteration.
    if (static_cast<int>(local) > static_cast<int>(deferred_action_)) deferred_action_ = local;
    return SolverAction::NONE;
  }
  in_iteration_ = false;
  if (static_cast<int>(deferred_action_) > static_cast<int>(local)) local = deferred_action_;
  deferred_action_ = SolverAction::NONE;
  if (comm_->size() == 1) return local;
  // NONE < SNAPSHOT < STOP: a stop anywhere stops every rank at the same iteration.
  auto code = static_cast<std::int32_t>(local == SolverAction::STOP       ? 2
                                        : local == SolverAction::SNAPSHOT ? 1
                                                                          : 0);
  comm_->Allreduce(&code, 1, CommType::kInt32, ReduceOp::kMax, "agree on stop/snapshot");
  if (code == 2) return SolverAction::STOP;
  // Only rank 0 writes snapshots.
  if (code == 1 && comm_->rank() == 0) return SolverAction::SNAPSHOT;
  return SolverAction::NONE;
}

template <typename Dtype>
void DistributedSolver<Dtype>::ReduceTestScores(int test_net_id, std::vector<double>* means) {
  if (comm_->size() == 1 || means->empty()) return;
  const int mine = rank_param_.test_iter(test_net_id);
  const int total = test_iter_total_[test_net_id];
  std::vector<double> sums(means->size());
  for (std::size_t i = 0; i < sums.size(); ++i) sums[i] = (*means)[i] * mine;
  comm_->Allreduce(sums.data(), sums.size(), CommType::kDouble, ReduceOp::kSum, "test scores");
  for (std::size_t i = 0; i < sums.size(); ++i) (*means)[i] = sums[i] / total;
  // A rank with one test batch fewer than others skips one, so that every rank's data
  // stream is at the same place for the next test: each test then scores `total`
  // consecutive batches (the whole test set once when total x batch is its size).
  const int most = (total + comm_->size() - 1) / comm_->size();
  if (mine < most) {
    Net<Dtype>& net = *solver_->test_nets()[test_net_id];
    for (std::size_t i = 0; i < net.layers().size(); ++i) {
      if (net.bottom_vecs()[i].empty() && LayerTypeTraits(net.layers()[i]->type()).shard) {
        net.ForwardFromTo(static_cast<int>(i), static_cast<int>(i));
      }
    }
  }
  LOG_FIRST_N(INFO, 1) << "Test scores are means over all " << total << " test batches of the "
                       << comm_->size() << " ranks";
}

template <typename Dtype>
void DistributedSolver<Dtype>::LogRankTimes() {
  if (comm_->size() == 1) return;
  const int iterations = totals_.iterations - at_last_display_.iterations;
  const double n = std::max(1, iterations);
  double mine[5] = {
      (totals_.compute - at_last_display_.compute) / n, (totals_.wait - at_last_display_.wait) / n,
      (totals_.comm - at_last_display_.comm) / n, (totals_.hidden - at_last_display_.hidden) / n,
      (totals_.iteration - at_last_display_.iteration) / n};
  at_last_display_ = totals_;
  std::vector<double> all(5 * comm_->size());
  comm_->Allgather(mine, all.data(), 5, CommType::kDouble, "rank times");
  if (comm_->rank() != 0) return;
  int slowest = 0, fastest = 0, most_wait = 0, least_wait = 0;
  double comm = 0, hidden = 0, iteration = 0;
  for (int r = 0; r < comm_->size(); ++r) {
    if (all[5 * r] > all[5 * slowest]) slowest = r;
    if (all[5 * r] < all[5 * fastest]) fastest = r;
    if (all[5 * r + 1] > all[5 * most_wait + 1]) most_wait = r;
    if (all[5 * r + 1] < all[5 * least_wait + 1]) least_wait = r;
    comm += all[5 * r + 2];
    hidden += all[5 * r + 3];
    iteration = std::max(iteration, all[5 * r + 4]);
  }
  const long long global_batch =
      static_cast<long long>(batch_) * rank_param_.iter_size() * comm_->size();
  std::ostringstream line;
  line << "Iteration " << solver_->iter() << ", ranks over the last " << iterations << " iteration"
       << (iterations == 1 ? "" : "s") << ": compute per iteration slowest rank " << slowest << " "
       << Milliseconds(all[5 * slowest]) << ", fastest rank " << fastest << " "
       << Milliseconds(all[5 * fastest]) << "; communication wait most rank " << most_wait << " "
       << Milliseconds(all[5 * most_wait + 1]) << ", least rank " << least_wait << " "
       << Milliseconds(all[5 * least_wait + 1]) << "; communication "
       << Milliseconds(comm / comm_->size()) << " per iteration, "
       << static_cast<int>(comm > 0 ? 100.0 * hidden / comm + 0.5 : 0)
       << "% hidden behind backward; " << std::fixed << std::setprecision(1)
       << (iteration > 0 ? global_batch / iteration : 0.0) << " images/s over all ranks";
  LOG(INFO) << line.str();
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
    // (Per-rank state such as BatchNorm's running statistics is each rank's own, as in
    // Caffe's multi-GPU training; snapshots hold rank 0's.)
    Hasher hash;
    const Net<Dtype>& net = *solver_->net();
    for (std::size_t i = 0; i < net.learnable_params().size(); ++i) {
      const int layer = net.learnable_param_last_layer()[i];
      if (net.params_lr()[i] == 0.f ||
          LayerTypeTraits(net.layers()[layer]->type()).per_rank_state) {
        continue;
      }
      hash.AddBytes(net.arena_data() + net.learnable_param_offsets()[i],
                    net.learnable_params()[i]->count() * sizeof(Dtype));
    }
    const std::vector<std::uint64_t> sums = comm_->AllgatherValue(hash.value(), "final checksum");
    std::vector<int> differ;
    for (int r = 1; r < comm_->size(); ++r) {
      if (sums[r] != sums[0]) differ.push_back(r);
    }
    if (!differ.empty()) {
      LOG(WARNING) << "after training, the learned weights of " << RankList(differ)
                   << " differ from rank 0's (checksum); the snapshots hold rank 0's";
    }
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
